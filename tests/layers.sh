#!/bin/sh
# layers.sh: the file-level dependency graph of Strata's library, from its
# object files, and the rules it must keep.
#
#   sh tests/layers.sh BUILD            check; print one line per finding
#   sh tests/layers.sh BUILD --edges    also print every edge "a.c -> b.c"
#
# File a.c uses file b.c when a.o refers to a global symbol that b.o
# defines (nm).  The rules checked:
#   1. No cycles among the files of one layer (runtime/, rank/, ...; each
#      of engine/'s rooms is a layer of its own): every strongly connected
#      component of more than one file is printed with its members.
#   2. Layers depend one way: engine -> rank -> runtime -> base,
#      engine -> store -> base; inside engine/, the root -> match/ ->
#      request/ -> value/.  An edge against that order is printed.
#   3. The programs (cli/, serve/) use the library only through its public
#      API: every library symbol they refer to is a strata_* function.
#   4. base/'s headers include nothing above base/ but include/strata_defs.h.
# Headers are checked too: a cycle of #include among the project's headers
# is a finding.  Exit status 1 when anything is found.
set -u
build=${1:?usage: layers.sh BUILD [--edges]}
show=${2:-}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# Library objects only (not tests, bench or the CLI).
objs=$(find "$build/base" "$build/runtime" "$build/store" "$build/rank" "$build/engine" \
	-name '*.o' 2>/dev/null | sort)
progs=$(find "$build/cli" "$build/serve" -name '*.o' 2>/dev/null | sort)
[ -n "$objs" ] || { echo "layers: no objects under $build (build first)"; exit 2; }

for o in $objs; do
	src=${o#"$build"/}
	src=${src%.o}.c
	nm -g --defined-only "$o" | awk -v f="$src" 'NF==3 && $2 !~ /[UuwvV]/ {print "D", $3, f}'
	nm -u "$o" | awk -v f="$src" '{print "U", $NF, f}'
done >"$tmp/syms"

awk '$1=="D" {def[$2]=$3; next}
     $1=="U" && ($2 in def) && def[$2] != $3 {print $3, def[$2]}' \
	"$tmp/syms" "$tmp/syms" | sort -u >"$tmp/edges"

# Headers: "a.h -> b.h" for each #include "..." between project headers.
for h in $(find base runtime store rank engine include cli serve -name '*.h' | sort); do
	d=$(dirname "$h")
	sed -n 's/^#include "\([^"]*\)".*/\1/p' "$h" | while read -r inc; do
		t=$(realpath -m --relative-to=. "$d/$inc")
		[ -f "$t" ] && echo "$h $t"
	done
done | sort -u >"$tmp/hedges"

[ "$show" = "--edges" ] && sed 's/ / -> /' "$tmp/edges" "$tmp/hedges"

# Tarjan's strongly connected components over an edge list "a b".
scc() {
	awk '
	{ if (!($1 in seen)) { seen[$1]=1; node[++nn]=$1 }
	  if (!($2 in seen)) { seen[$2]=1; node[++nn]=$2 }
	  adj[$1, ++deg[$1]] = $2 }
	function visit(v,   i, w, c, members) {
		idx[v] = low[v] = ++counter; stack[++sp] = v; on[v] = 1
		for (i = 1; i <= deg[v]; i++) {
			w = adj[v, i]
			if (!(w in idx)) { visit(w); if (low[w] < low[v]) low[v] = low[w] }
			else if (on[w] && idx[w] < low[v]) low[v] = idx[w]
		}
		if (low[v] == idx[v]) {
			c = 0; members = ""
			do { w = stack[sp--]; on[w] = 0; c++; members = members " " w } while (w != v)
			if (c > 1) print c members
		}
	}
	END { for (i = 1; i <= nn; i++) if (!(node[i] in idx)) visit(node[i]) }'
}

found=0
# The layer of a file: its top folder, or engine/ROOM for engine's rooms.
layer='function layer(f,   p) { n = split(f, p, "/")
	return (p[1] == "engine" && n > 2) ? p[1] "/" p[2] : p[1] }'
cycles=$(awk "$layer"' {if (layer($1) == layer($2)) print}' "$tmp/edges" | scc)
if [ -n "$cycles" ]; then
	echo "$cycles" | while read -r n rest; do echo "layers: cycle of $n files:$rest"; done
	found=1
fi
hcycles=$(scc <"$tmp/hedges")
if [ -n "$hcycles" ]; then
	echo "$hcycles" | while read -r n rest; do echo "layers: include cycle of $n headers:$rest"; done
	found=1
fi
# Allowed subsystem edges (a may use b).
# engine/'s rooms may use what the engine may, and the rooms below them.
bad=$(awk "$layer"'
	BEGIN { ok["engine","rank"]; ok["engine","runtime"]; ok["engine","store"]; ok["engine","base"]
	        ok["rank","runtime"]; ok["rank","base"]; ok["runtime","base"]; ok["store","base"]
	        ok["engine","engine/match"]; ok["engine","engine/request"]; ok["engine","engine/value"]
	        ok["engine/match","engine/request"]; ok["engine/match","engine/value"]
	        ok["engine/request","engine/value"] }
	{ a = layer($1); b = layer($2); split(a, top, "/")
	  if (a != b && !((a, b) in ok) && !((top[1] != a) && (top[1], b) in ok && b !~ /^engine/)) print $1 " -> " $2 }' "$tmp/edges")
if [ -n "$bad" ]; then
	echo "$bad" | sed 's/^/layers: against the layering: /'
	found=1
fi
# Programs: the library symbols they use must be public (strata_*).
for o in $progs; do
	src=${o#"$build"/}
	nm -u "$o" | awk -v f="${src%.o}.c" '{print f, $NF}'
done >"$tmp/puses"
internal=$(awk 'NR == FNR { if ($1 == "D") lib[$2] = $3; next }
	($2 in lib) && $2 !~ /^strata_/ { print $1 " uses " $2 " (" lib[$2] ")" }' \
	"$tmp/syms" "$tmp/puses" | sort -u)
if [ -n "$internal" ]; then
	echo "$internal" | sed 's/^/layers: program uses the library'"'"'s internals: /'
	found=1
fi
# base/'s headers: nothing above base/ but the public definitions.
bup=$(awk '$1 ~ /^base\// && $2 !~ /^base\// && $2 != "include/strata_defs.h" { print $1 " -> " $2 }' "$tmp/hedges")
if [ -n "$bup" ]; then
	echo "$bup" | sed 's/^/layers: base includes above it: /'
	found=1
fi
n=$(wc -l <"$tmp/edges")
files=$(echo "$objs" | wc -w)
if [ $found -eq 0 ]; then
	echo "layers: $files library files, $n dependencies between them: no cycles, every edge points down;"
	echo "layers: $(echo "$progs" | wc -w) program files use only the public API (include/strata.h)"
	echo "layers: the layout, files per layer:"
	for o in $objs $progs; do src=${o#"$build"/}; echo "$src"; done |
		awk "$layer"' { c[layer($0)]++ } END { for (l in c) printf "  %-16s %3d\n", l "/", c[l] }' | sort
fi
exit $found
