#!/bin/sh
# Deploy every application of a tree of Vespa applications (each folder
# holding a schemas/ folder), unchanged, into a scratch data folder; print one
# line per application and the schemas that deployed.
#   usage: sh tests/vespa_apps.sh [ROOT] [STRATA]     (ROOT: ../shared/vespa-apps)
# A schema counts as deployed when its application deploys, or when none of
# the errors deploy lists names its file.  Exits 0; the count is the result.
root=${1:-../shared/vespa-apps}
strata=${2:-build/strata}
if [ ! -d "$root" ]; then echo "vespa-apps: $root not found, skipped"; exit 0; fi
ok=0 total=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for s in $(find "$root" -name schemas -type d | sort); do
	app=$(dirname "$s")
	name=${app#"$root"/}
	n=$(ls "$s"/*.sd 2>/dev/null | wc -l)
	[ "$n" -gt 0 ] || continue
	total=$((total + n))
	rm -rf "$scratch/data"
	if "$strata" deploy "$app" --data "$scratch/data" >"$scratch/out" 2>&1; then
		ok=$((ok + n))
		printf '%-4s %d/%d %s\n' OK "$n" "$n" "$name"
	else
		bad=0
		for sd in "$s"/*.sd; do
			grep -q "$(basename "$sd"):[0-9]" "$scratch/out" && bad=$((bad + 1))
		done
		[ "$bad" -eq 0 ] && bad=$n  # an error outside the schemas
		ok=$((ok + n - bad))
		first=$(grep -v '^strata: deploy\|errors$' "$scratch/out" | head -n 1 | sed "s|$root/||; s|^strata: ||")
		printf '%-4s %d/%d %s: %s\n' FAIL "$((n - bad))" "$n" "$name" "$first"
	fi
done
echo "vespa-apps: $ok of $total schemas deployed"
