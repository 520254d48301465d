#!/usr/bin/env node
'use strict';
// ort_peer.js PEERDIR MODEL BATCH SEQ
//
// The ONNX Runtime side of Strata's benchmark.  build/bench/bench starts one of
// these per case, before it loads its own copy of the model, and drives it over
// stdin/stdout with one line per command and one line per answer, so that the
// two runtimes take turns on the same machine state:
//
//   (on start)  ready CHECKSUM ORT_VERSION NODE_VERSION | error MESSAGE
//   warm N      runs N times untimed       -> ok V0 V1 ...  (first cells of output 0)
//   run N       times N runs, in ms        -> ok T1 T2 ... TN cpu C1 C2 ... CN
//   out         one more run               -> ok V0 V1 ...  (every cell of output 0)
//   quit                                   -> rss MAXRSS_KB, then exits
//
// PEERDIR is a set-up copy of the peer harness (its node_modules and inputs.js):
// the feeds come from the peer's own input generator with seed 7 (the seed
// ort_bench.js uses), and CHECKSUM is the sum of every input cell, in input
// order, so the driver can check that it fed Strata the same tensors.  Session
// settings are ort_bench.js's: one intra-op and one inter-op thread, sequential
// execution, graph optimization level 'all', the CPU execution provider.  A run
// is timed around `await session.run(feeds)`, as ort_bench.js times it; Ci is
// the CPU time of the whole process during that run (process.cpuUsage: user
// plus system, every thread, in ms), which the driver compares with Strata's
// own CPU time when the machine is shared with other work.
//
// ort_peer.js --create PEERDIR MODEL
//
// Session creation alone, for the driver's load benchmark: one
// InferenceSession.create of MODEL in this fresh process (one intra-op and
// one inter-op thread, the CPU provider, every other setting, graph
// optimizations included, at ORT's default), timed around the awaited call,
// after the module has been loaded.  Prints `created MS ORT_VERSION` or
// `error MESSAGE`, then exits.

const path = require('path');
const readline = require('readline');

const SEED = 7;

function reply(line) {
  // Writes to a pipe are synchronous on Linux, so the answer is out before
  // the next command is read.
  process.stdout.write(line + '\n');
}

async function create(peerDir, model) {
  const root = path.resolve(peerDir);
  const ort = require(require.resolve('onnxruntime-node', { paths: [root] }));
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, executionProviders: ['cpu'],
  });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  await session.release();
  reply(`created ${ms} ${ort.env.versions.node || '?'}`);
  process.exit(0);
}

async function main() {
  if (process.argv[2] === '--create') {
    const [peerDir, model] = process.argv.slice(3);
    if (!peerDir || !model) {
      console.error('usage: ort_peer.js --create PEERDIR MODEL');
      process.exit(2);
    }
    return create(peerDir, model);
  }
  const [peerDir, model, batchArg, seqArg] = process.argv.slice(2);
  if (!peerDir || !model || !batchArg) {
    console.error('usage: ort_peer.js PEERDIR MODEL BATCH SEQ');
    process.exit(2);
  }
  const root = path.resolve(peerDir);
  // Resolve onnxruntime-node from the peer's node_modules: inputs.js requires
  // the same file, so both share one module instance.
  const ort = require(require.resolve('onnxruntime-node', { paths: [root] }));
  const { makeFeeds } = require(path.join(root, 'inputs.js'));

  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all', executionProviders: ['cpu'],
  });
  const batch = Number(batchArg), seq = Number(seqArg || 1);
  const feeds = makeFeeds(session.inputMetadata, { batch, seq, seed: SEED });
  let checksum = 0;
  for (const name of session.inputNames) {
    for (const v of feeds[name].data) checksum += Number(v);
  }
  const out0 = session.outputNames[0];
  reply(`ready ${checksum} ${ort.env.versions.node || '?'} ${process.version}`);

  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of rl) {
    const [cmd, arg] = line.trim().split(/\s+/);
    const n = Number(arg);
    if (cmd === 'warm' && n >= 0) {
      let out;
      for (let i = 0; i < n; i++) out = await session.run(feeds);
      if (!out) out = await session.run(feeds);
      reply('ok ' + Array.from(out[out0].data.slice(0, 8), Number).join(' '));
    } else if (cmd === 'run' && n > 0) {
      const times = new Array(n), cpu = new Array(n);
      for (let i = 0; i < n; i++) {
        const c0 = process.cpuUsage();
        const t0 = process.hrtime.bigint();
        await session.run(feeds);
        times[i] = Number(process.hrtime.bigint() - t0) / 1e6;
        const c = process.cpuUsage(c0);
        cpu[i] = (c.user + c.system) / 1e3;
      }
      reply('ok ' + times.join(' ') + ' cpu ' + cpu.join(' '));
    } else if (cmd === 'out') {
      const out = await session.run(feeds);
      reply('ok ' + Array.from(out[out0].data, Number).join(' '));
    } else if (cmd === 'quit') {
      await session.release();
      reply(`rss ${process.resourceUsage().maxRSS}`);
      process.exit(0);
    } else {
      reply(`error unknown command: ${line}`);
    }
  }
  // stdin closed without quit: the driver has gone.
  process.exit(0);
}

main().catch((e) => {
  reply('error ' + String(e && e.message ? e.message : e).replace(/\s+/g, ' '));
  process.exit(1);
});
