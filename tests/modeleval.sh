#!/bin/sh
# modeleval.sh: /model-evaluation/v1/ (Vespa's stateless model evaluation)
# of `strata serve`, driven with curl over tests/data/modeleval: three ONNX
# models (add_mul: output1 = input1 * input2, output2 = input1 + input2, of
# tensor<float>(d0[1]); sub/one.layer: a batch of 3-vectors times [1,2,3];
# ids: an int64 input "ids:0" added to itself), a rank profile over add_mul
# (so deploy compiles its context) and services.xml with <model-evaluation>.
#
#   STRATA=build/strata MKSHOP=build/tests/mkshop sh tests/modeleval.sh
#
# Checked: the listings (names derived from the paths, functions, argument
# types with an unbound dimension); evaluation by GET parameters in the
# literal forms, by POST form and JSON bodies, every format.tensors; an
# unbound dimension sized from the value; int64 cells through a double
# type; missing-value; the errors (status and {"error"} text) of an unknown
# model, function, argument, format, API version, a bad or mistyped
# tensor, a missing argument, no function named where there are two, a
# method other than GET or POST; searches still answered; with services.xml
# lacking <model-evaluation> every path is 404 "not enabled"; without
# services.xml it is served; an unknown setting inside <model-evaluation>
# and a file name that is no model name answer with their errors.  The
# last line is "N passed, M failed".
set -u

here=$(cd "$(dirname "$0")" && pwd)
suite=modeleval
. "$here/clitest.sh"
APP=$T/app

if ! command -v curl >/dev/null 2>&1; then
	echo "modeleval: curl is needed (make deps-test installs it)"
	echo "0 passed, 1 failed"
	exit 1
fi
cp -R "$top/tests/data/modeleval" "$APP"
if ! "$STRATA" deploy "$APP" >/dev/null 2>"$T/err"; then
	echo "modeleval: cannot deploy the fixture: $(cat "$T/err")"
	echo "0 passed, 1 failed"
	exit 1
fi

# serve ARGS...: start (clitest.sh), and the URLs the checks use.
serve() {
	start "$@" || return 1
	M=$B/model-evaluation/v1
	E=$M/add_mul/output1/eval
}

# halt: stop, and the server's exit and log checked.
halt() {
	stop
	check "server exits 0 on SIGTERM" "$rc" "0"
	if grep -Eq 'Sanitizer|runtime error:' "$T/log"; then
		bad "sanitizer report: $(head -c 600 "$T/log")"
	fi
}

# get NAME STATUS BODY URL [CURL_ARGS...]: the answer of URL is exactly BODY.
get() {
	name=$1
	want=$2
	body=$3
	shift 3
	code=$(curl -s -o "$OUT" -w '%{http_code}' "$@" 2>"$ERR")
	check "$name: status ($(head -c 300 "$OUT"))" "$code" "$want"
	check "$name" "$(cat "$OUT")" "$body"
}

serve || { echo "$passed passed, $failed failed"; exit 1; }

# ---- listings ----
get "list models" 200 '{"add_mul":"/model-evaluation/v1/add_mul","ids":"/model-evaluation/v1/ids","sub_one_layer":"/model-evaluation/v1/sub_one_layer"}' "$M/"
get "list models, no slash" 200 "$(cat "$OUT")" "$M"
A1='{"name":"input1","type":"tensor<float>(d0[1])"},{"name":"input2","type":"tensor<float>(d0[1])"}'
F1='{"function":"output1","info":"/model-evaluation/v1/add_mul/output1","eval":"/model-evaluation/v1/add_mul/output1/eval","arguments":['$A1']}'
F2='{"function":"output2","info":"/model-evaluation/v1/add_mul/output2","eval":"/model-evaluation/v1/add_mul/output2/eval","arguments":['$A1']}'
get "model info" 200 '{"model":"add_mul","functions":['$F1','$F2']}' "$M/add_mul"
get "model info, other case" 200 '{"model":"add_mul","functions":['$F1','$F2']}' "$M/Add_Mul/"
get "function info" 200 '{"model":"add_mul",'"${F1#\{}" "$M/add_mul/output1"
get "batch dimension info" 200 '{"model":"sub_one_layer","functions":[{"function":"output","info":"/model-evaluation/v1/sub_one_layer/output","eval":"/model-evaluation/v1/sub_one_layer/output/eval","arguments":[{"name":"input","type":"tensor<float>(d0[],d1[3])"}]}]}' "$M/sub_one_layer"
get "names made identifiers, int64 as double" 200 '{"model":"ids","functions":[{"function":"sum_0","info":"/model-evaluation/v1/ids/sum_0","eval":"/model-evaluation/v1/ids/sum_0/eval","arguments":[{"name":"ids_0","type":"tensor(d0[2])"}]}]}' "$M/ids"

# ---- evaluation ----
get "eval, short literals" 200 '{"type":"tensor<float>(d0[1])","values":[6.0]}' "$E?input1=%5B2%5D&input2=%5B3%5D"
get "eval, typed literals, long" 200 '{"type":"tensor<float>(d0[1])","cells":[{"address":{"d0":"0"},"value":5.0}]}' \
	"$M/add_mul/output2/eval" -G --data-urlencode 'input1=tensor<float>(d0[1]):[2]' \
	--data-urlencode 'input2=tensor<float>(d0[1]):[3]' --data-urlencode 'format.tensors=long'
get "eval, cells literal, short-value" 200 '[6.0]' "$E" -G --data-urlencode 'input1={{d0:0}:2}' \
	--data-urlencode 'input2=[3]' --data-urlencode 'format.tensors=short-value'
get "eval, long-value" 200 '[{"address":{"d0":"0"},"value":6.0}]' "$E?input1=%5B2%5D&input2=%5B3%5D&format.tensors=long-value"
get "eval, string" 200 'tensor<float>(d0[1]):[6.0]' "$E?input1=%5B2%5D&input2=%5B3%5D&format.tensors=string"
get "eval, string-long" 200 'tensor<float>(d0[1]):{{d0:0}:6.0}' "$E?input1=%5B2%5D&input2=%5B3%5D&format.tensors=string-long"
get "eval, two path segments" 200 '{"type":"tensor<float>(d0[1])","values":[6.0]}' "$M/add_mul/output1/eval/?input1=%5B2%5D&input2=%5B3%5D"
get "POST form body" 200 '{"type":"tensor<float>(d0[1])","values":[5.0]}' -X POST \
	"$M/add_mul/output2/eval" --data-urlencode 'input1=[2]' --data-urlencode 'input2=tensor<float>(d0[1]):[3]'
get "POST JSON body, JSON tensors" 200 '{"type":"tensor<float>(d0[1])","cells":[{"address":{"d0":"0"},"value":-1.5}]}' -X POST \
	"$E" -d '{"input1": [0.5], "input2": {"values": [-3]}, "format.tensors": "long"}'
get "missing-value binds the rest" 200 '{"type":"tensor<float>(d0[1])","values":[8.0]}' "$E?input1=%5B2%5D&missing-value=%5B4%5D"
batch='{{d0:0,d1:0}:0.1,{d0:0,d1:1}:0.2,{d0:0,d1:2}:0.3,{d0:1,d1:0}:0.4,{d0:1,d1:1}:0.5,{d0:1,d1:2}:0.6}'
get "unbound dimension from cells, only function" 200 'tensor<float>(d0[2],d1[1]):[[1.4000001], [3.2]]' "$M/sub_one_layer/eval" -G \
	--data-urlencode "input=tensor<float>(d0[],d1[3]):$batch" --data-urlencode 'format.tensors=string'
get "unbound dimension from arrays" 200 '{"type":"tensor<float>(d0[3],d1[1])","values":[[6.0],[0.0],[-6.0]]}' "$M/sub_one_layer/output/eval" -G \
	--data-urlencode 'input=[[1,1,1],[0,0,0],[-1,-1,-1]]'
get "int64 through double" 200 '{"type":"tensor(d0[2])","values":[2.0,-8.0]}' "$M/ids/eval?ids_0=%5B1,-4%5D"
get "cast to int64 as C does" 200 '{"type":"tensor(d0[2])","values":[4.0,-2.0]}' "$M/ids/eval?ids_0=%5B2.7,-1.2%5D"

# ---- errors ----
get "unknown model" 404 '{"error":"No model named '"'nope'"'. Available models: add_mul, ids, sub_one_layer"}' "$M/nope"
get "unknown model, eval" 404 '{"error":"No model named '"'nope'"'. Available models: add_mul, ids, sub_one_layer"}' "$M/nope/eval"
get "unknown function" 404 '{"error":"No function '"'nope'"' in model '"'add_mul'"'. Available functions: output1, output2"}' "$M/add_mul/nope/eval?input1=%5B2%5D"
get "no function named" 404 '{"error":"More than one function is available in model '"'add_mul'"', but no name is given. Available functions: output1, output2"}' "$M/add_mul/eval"
get "missing argument" 400 '{"error":"Argument '"'input2'"' must be bound to a value of type tensor<float>(d0[1])"}' "$E?input1=%5B2%5D"
get "unknown argument" 404 '{"error":"'"'foo'"' is not a valid argument in function '"'output1'"' of model '"'add_mul'"'. Expected arguments: input1: tensor<float>(d0[1]), input2: tensor<float>(d0[1])"}' "$E?input1=%5B2%5D&input2=%5B3%5D&foo=1"
get "bad tensor" 400 '{"error":"Argument '"'input2'"' must be bound to a value of type tensor<float>(d0[1]): malformed tensor literal near '"'x}'"'"}' "$E" -G \
	--data-urlencode 'input1=[2]' --data-urlencode 'input2={{d0:0}:x}'
get "too many values" 400 '{"error":"Argument '"'input2'"' must be bound to a value of type tensor<float>(d0[1]): 2 values, expected 1"}' "$E" -G \
	--data-urlencode 'input1=[2]' --data-urlencode 'input2=[3,4]'
get "mistyped literal" 400 '{"error":"Argument '"'input1'"' must be bound to a value of type tensor<float>(d0[1]): the value'"'"'s type '"'tensor<float>(d0[2])'"' is another"}' "$E" -G \
	--data-urlencode 'input1=tensor<float>(d0[2]):[2,3]' --data-urlencode 'input2=[3]'
get "unknown format" 400 '{"error":"Unknown tensor format '"'xml'"' (short, long, short-value, long-value, string, string-long)"}' "$E?input1=%5B2%5D&input2=%5B3%5D&format.tensors=xml"
get "argument in URL and body" 400 '{"error":"'"'input1'"' is given twice (the URL and the body)"}' -X POST "$E?input1=%5B2%5D" -d 'input1=[2]&input2=[3]'
get "body not JSON" 400 '{"error":"the body is not JSON: 1:2: string or '"'}'"' expected near '"'x'"'"}' -X POST "$E" -d '{x'
get "unknown version" 404 '{"error":"unknown API version"}' "$B/model-evaluation/v2/"
get "DELETE" 405 '{"error":"/model-evaluation/v1/ takes GET or POST"}' -X DELETE "$M/add_mul"
get "unbound size not told" 400 '{"error":"Argument '"'input'"' must be bound to a value of type tensor<float>(d0[],d1[3]): the value does not tell the size of dimension d0"}' "$M/sub_one_layer/eval?input=%5B%5D"

# the rest of the server is untouched
code=$(curl -s -o "$OUT" -w '%{http_code}' "$B/search/?yql=select%20*%20from%20doc%20where%20true")
check "search still answers" "$code" "200"
halt

# ---- services.xml without <model-evaluation/>: not served ----
cat >"$APP/services.xml" <<'EOF'
<services version="1.0"><container id="c" version="1.0"><search/></container></services>
EOF
serve || { echo "$passed passed, $failed failed"; exit 1; }
NE='{"error":"model evaluation is not enabled: services.xml has no <model-evaluation/> in a <container>"}'
get "not enabled: list" 404 "$NE" "$M/"
get "not enabled: eval" 404 "$NE" "$E?input1=%5B2%5D&input2=%5B3%5D"
halt

# ---- no services.xml: served ----
rm "$APP/services.xml"
serve || { echo "$passed passed, $failed failed"; exit 1; }
get "no services.xml: eval" 200 '{"type":"tensor<float>(d0[1])","values":[6.0]}' "$E?input1=%5B2%5D&input2=%5B3%5D"
halt

# ---- settings refused, names refused ----
cat >"$APP/services.xml" <<'EOF'
<services version="1.0">
  <container id="c" version="1.0">
    <model-evaluation>
      <onnx><models><model name="add_mul"><batching/></model></models></onnx>
    </model-evaluation>
  </container>
</services>
EOF
serve || { echo "$passed passed, $failed failed"; exit 1; }
code=$(curl -s -o "$OUT" -w '%{http_code}' "$M/")
check "unknown setting: status" "$code" "500"
check "unknown setting: message" "$(jq -r .error "$OUT")" \
	'services.xml:4:43: <batching> is not supported in <model-evaluation> (<onnx><models><model name=".."> with intraop-threads, interop-threads, execution-mode, gpu-device)'
halt
cat >"$APP/services.xml" <<'EOF'
<services version="1.0"><container id="c" version="1.0"><model-evaluation>
<onnx><models><model name="missing"><gpu-device>0</gpu-device></model></models></onnx>
</model-evaluation></container></services>
EOF
serve || { echo "$passed passed, $failed failed"; exit 1; }
get "settings of no model" 500 '{"error":"services.xml:2:15: <model name=\"missing\">: models/ has no such model"}' "$M/"
halt
rm "$APP/services.xml"
cp "$APP/models/ids.onnx" "$APP/models/bad-name.onnx"
serve || { echo "$passed passed, $failed failed"; exit 1; }
get "file name that is no model name" 500 '{"error":"models/bad-name.onnx: a model'"'"'s name is made of its path under models/, which may hold only letters, digits, '"'_'"' and '"'.'"': rename it"}' "$M/"
halt

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
