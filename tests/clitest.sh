# clitest.sh: what the CLI test scripts (e2e.sh, crash.sh) share; they source
# it after setting here (their folder) and suite (their name, for messages).
#
# Sets STRATA (the CLI: the first argument, $STRATA, or build/strata) and
# MKSHOP (beside it, or $MKSHOP) as absolute paths, and T, a temporary
# folder removed at exit; defines ok and bad, which count checks into passed
# and failed.  Stops with "0 passed, 1 failed" when a tool or jq is missing.

top=$(cd "$here/.." && pwd)
STRATA=${1:-${STRATA:-$top/build/strata}}
MKSHOP=${MKSHOP:-$(dirname "$STRATA")/tests/mkshop}
case $STRATA in /*) ;; *) STRATA=$(pwd)/$STRATA ;; esac
case $MKSHOP in /*) ;; *) MKSHOP=$(pwd)/$MKSHOP ;; esac

passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

for tool in "$STRATA" "$MKSHOP"; do
	if [ ! -x "$tool" ]; then
		echo "$suite: $tool not built (make all build/tests/mkshop)"
		echo "0 passed, 1 failed"
		exit 1
	fi
done
if ! command -v jq >/dev/null 2>&1; then
	echo "$suite: jq is needed (make deps installs it)"
	echo "0 passed, 1 failed"
	exit 1
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/strata-$suite.XXXXXX")
