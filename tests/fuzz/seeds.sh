#!/bin/sh
# seeds.sh: fill the working corpora of make fuzz.
#
#   sh tests/fuzz/seeds.sh SHARED TESTDATA OUT TARGET...
#
# OUT/TARGET receives the committed seeds of tests/fuzz/corpus/TARGET, and,
# when the folder SHARED exists, real inputs taken from SHARED/vespa-apps:
#   sd    every .sd schema
#   feed  every .jsonl and .json file (of a large one, its first 40 lines
#         or 64 KiB)
#   onnx  every .onnx model under 1 MiB
#   services  every services.xml
#   expr  every rank expression of those schemas ("expression: ..." and the
#         bodies of "expression { ... }" blocks), one per file
# and, when TESTDATA (libonnx-testdata's data folder) exists, the model of
# each case of its node suite for onnx.  Files are named by the SHA-1 of
# their content, as libFuzzer names what it adds, so a second run adds
# nothing twice.  Nothing here is written outside OUT.
set -eu
shared=$1
testdata=$2
out=$3
shift 3

# put FILE TARGET: copy FILE into OUT/TARGET under its content's name.
put() {
	sum=$(sha1sum <"$1" | cut -c1-40)
	cp "$1" "$out/$2/$sum"
}

# put_text TARGET: stdin into OUT/TARGET under its content's name.
put_text() {
	tmp="$out/.seed.$$"
	cat >"$tmp"
	if [ -s "$tmp" ]; then
		put "$tmp" "$1"
	fi
	rm -f "$tmp"
}

apps="$shared/vespa-apps"
for t in "$@"; do
	mkdir -p "$out/$t"
	for f in tests/fuzz/corpus/"$t"/*; do
		[ -f "$f" ] && put "$f" "$t"
	done
	before=$(ls "$out/$t" | wc -l)
	if [ -d "$apps" ]; then
		case $t in
		sd)
			find "$apps" -name '*.sd' -size -64k | while read -r f; do put "$f" sd; done ;;
		feed)
			find "$apps" \( -name '*.jsonl' -o -name '*.json' \) | while read -r f; do
				if [ "$(wc -c <"$f")" -lt 65536 ]; then put "$f" feed
				else head -n 40 "$f" | head -c 65536 | put_text feed; fi
			done ;;
		onnx)
			find "$apps" -name '*.onnx' -size -1024k | while read -r f; do put "$f" onnx; done ;;
		services)
			find "$apps" -name services.xml -size -64k | while read -r f; do put "$f" services; done ;;
		expr)
			# Each expression into its own file of a scratch folder first.
			tmpd="$out/.expr.$$"
			mkdir -p "$tmpd"
			find "$apps" -name '*.sd' | awk '{ print NR, $0 }' | while read -r k f; do
				awk -v pre="$tmpd/$k-" '
				function scan(s,   n, i, ch) {
					n = split(s, ch, "")
					for (i = 1; i <= n; i++) {
						if (ch[i] == "{") depth++
						if (ch[i] == "}" && --depth == 0) { close(file); block = 0; return }
						printf "%s", ch[i] > file
					}
					printf "\n" > file
				}
				block { scan($0); next }
				/expression *:/ {
					sub(/.*expression *: */, ""); file = pre (++e)
					printf "%s", $0 > file; close(file); next
				}
				/expression *\{/ {
					sub(/.*expression *\{/, ""); file = pre (++e); depth = 1; block = 1
					scan($0)
				}' "$f"
			done
			for f in "$tmpd"/*; do
				[ -s "$f" ] && put "$f" expr
			done
			rm -rf "$tmpd" ;;
		esac
	fi
	if [ "$t" = onnx ] && [ -d "$testdata/node" ]; then
		for f in "$testdata"/node/*/model.onnx; do put "$f" onnx; done
		echo "fuzz: onnx: also the models of $testdata/node"
	fi
	after=$(ls "$out/$t" | wc -l)
	if [ -d "$apps" ]; then
		echo "fuzz: $t: $after inputs in $out/$t ($((after - before)) new from $shared and test data)"
	else
		echo "fuzz: $t: $after inputs in $out/$t ($shared not found: only the committed seeds added)"
	fi
done
