#!/usr/bin/env node
'use strict';
// quantize.js PEERDIR IN.onnx OUT.onnx
//
// Dynamic int8 quantization of a float model by ONNX Runtime's rules
// (onnxruntime.quantization.quantize_dynamic with its defaults), for the
// benchmark's int8 cases, so that Strata and ORT run one and the same
// quantized file:
//
//  - MatMul whose B is a 2-D float initializer (MatMulConstBOnly, on by
//    default in dynamic mode): the weight becomes int8, per tensor,
//    symmetric (WeightSymmetric defaults to true for int8 weights: range
//    [-127, 127], scale = 2 * max|w| / 254, zero point 0); the activation
//    is quantized at run time to uint8 by DynamicQuantizeLinear, one per
//    float value however many MatMuls read it; the product is
//    MatMulInteger -> Cast(float) -> Mul(x_scale * w_scale), the pattern
//    ORT's optimizer fuses into MatMulIntegerToFloat.  Node and value names
//    follow the quantizer's (_quantized, _scale, _zero_point, _quant, ...).
//  - Gather from a float initializer (an embedding table): the table is
//    quantized as an activation type, uint8, but with the weights'
//    symmetry (zero point 128, scale = 2 * max|w| / 255); the gathered
//    uint8 rows are dequantized by a DequantizeLinear, since what reads them
//    (Add) is not quantized.
//  - Everything else (Gemm included: not among the dynamic mode's
//    operators) stays float.
//
// Scales are computed in float64 and stored as float32, as numpy does in
// the quantizer; values are divided in float32 and rounded half to even.
//
// PEERDIR is a set-up copy of the peer harness (its onnxpb.js and
// node_modules).  Prints one line: the counts of quantized nodes.

const fs = require('fs');
const path = require('path');

function roundHalfEven(x) {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

// Per-tensor quantization of data (Float32Array): qmin..qmax, symmetric.
function quantizeTable(data, qmin, qmax, Ctor) {
  let lo = 0, hi = 0;
  for (const v of data) { if (v < lo) lo = v; if (v > hi) hi = v; }
  const absmax = Math.max(Math.abs(lo), Math.abs(hi));
  let scale = Math.fround((2 * absmax) / (qmax - qmin));
  let zp = roundHalfEven((qmin + qmax) / 2);
  if (!(scale > 0)) { scale = 1; zp = 0; }
  const q = new Ctor(data.length);
  for (let i = 0; i < data.length; i++) {
    const r = roundHalfEven(Math.fround(data[i] / scale)) + zp;
    q[i] = r < qmin ? qmin : r > qmax ? qmax : r;
  }
  return { q, scale, zp };
}

function main() {
  const [peerDir, inPath, outPath] = process.argv.slice(2);
  if (!peerDir || !inPath || !outPath) {
    console.error('usage: quantize.js PEERDIR IN.onnx OUT.onnx');
    process.exit(2);
  }
  const pb = require(path.join(path.resolve(peerDir), 'onnxpb.js'));
  const { DT } = pb;
  const model = pb.decodeModel(fs.readFileSync(inPath));
  const g = model.graph;
  const inits = new Map(g.initializer.map((t) => [t.name, t]));
  const isFloatInit = (name, rank) => {
    const t = inits.get(name);
    return t && (t.dataType || 0) === DT.FLOAT && (rank === undefined || t.dims.length === rank);
  };
  const newInits = [];
  const done = new Map(); // initializer -> its quantized names
  const quantInit = (name, dt) => {
    if (done.has(name)) return done.get(name);
    const data = pb.tensorFromProto(inits.get(name)).data;
    const r = dt === DT.INT8 ? quantizeTable(data, -127, 127, Int8Array)
                             : quantizeTable(data, 0, 255, Uint8Array);
    const n = { q: `${name}_quantized`, scale: `${name}_scale`, zp: `${name}_zero_point` };
    newInits.push(pb.makeTensor(n.q, dt, inits.get(name).dims.map(Number), r.q));
    newInits.push(pb.makeTensor(n.scale, DT.FLOAT, [], [r.scale]));
    newInits.push(pb.makeTensor(n.zp, dt, [], [r.zp]));
    done.set(name, n);
    return n;
  };
  const dynq = new Map(); // float activation -> its DynamicQuantizeLinear outputs
  const nodes = [];
  let nMatMul = 0, nGather = 0;
  const node = (opType, input, output, name, attribute = []) =>
    nodes.push({ opType, input, output, name, attribute, domain: '' });
  for (const n of g.node) {
    if (n.opType === 'MatMul' && isFloatInit(n.input[1], 2) && !inits.has(n.input[0])) {
      const w = quantInit(n.input[1], DT.INT8);
      const x = n.input[0];
      if (!dynq.has(x)) {
        const d = { q: `${x}_quantized`, scale: `${x}_scale`, zp: `${x}_zero_point` };
        node('DynamicQuantizeLinear', [x], [d.q, d.scale, d.zp], `${x}_QuantizeLinear`);
        dynq.set(x, d);
      }
      const d = dynq.get(x), out = n.output[0], mmi = `${out}_output_quantized`;
      node('MatMulInteger', [d.q, w.q, d.zp, w.zp], [mmi], `${n.name}_quant`);
      node('Cast', [mmi], [`${mmi}_cast_output`], `${n.name}_quant_cast`,
           [{ name: 'to', type: 2, i: DT.FLOAT }]);
      node('Mul', [d.scale, w.scale], [`${n.name}_quant_scales_mul:0`], `${n.name}_quant_scales_mul`);
      node('Mul', [`${mmi}_cast_output`, `${n.name}_quant_scales_mul:0`], [out],
           `${n.name}_quant_output_scale_mul`);
      nMatMul++;
    } else if (n.opType === 'Gather' && isFloatInit(n.input[0])) {
      const t = quantInit(n.input[0], DT.UINT8);
      const out = n.output[0];
      node('Gather', [t.q, n.input[1]], [`${out}_quantized`], n.name, n.attribute);
      node('DequantizeLinear', [`${out}_quantized`, t.scale, t.zp], [out], `${out}_DequantizeLinear`);
      nGather++;
    } else {
      nodes.push(n);
    }
  }
  // Float initializers that only the quantized nodes read are dropped.
  const used = new Set();
  for (const n of nodes) for (const i of n.input) used.add(i);
  g.initializer = g.initializer.filter((t) => used.has(t.name)).concat(newInits);
  g.node = nodes;
  model.producerName = 'strata-bench-quantize';
  fs.writeFileSync(outPath, pb.encodeModel(model));
  console.log(`${path.basename(outPath)}: ${nMatMul} MatMul -> MatMulInteger, ${nGather} Gather from uint8 tables`);
}

main();
