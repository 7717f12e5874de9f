'use strict';
// The node-nodem mechanism: the benchmark's operation from Node.js through nodem (Fourth Watch Software's
// binding, which reaches GT.M through call-ins into its own M routine), one call per node, as a Node.js
// user of nodem would write it. Usage: node callins.js ITERATIONS "OP N", OP traverse or get (nodem's set
// fails on GT.M); NODEM_DIR and NODEM_ROUTINES name the build's nodem. Prints one bridgebench/1 line.
const fs = require('fs');

const iterations = Number(process.argv[2]);
const [op, n] = String(process.argv[3] || '').split(' ');
const limit = Number(n);
if (!(iterations >= 1) || !(limit >= 1) || !['traverse', 'get'].includes(op)) {
  process.stderr.write('usage: callins.js ITERATIONS "traverse|get N"\n');
  process.exit(2);
}

const setupStart = process.hrtime.bigint();
const nodem = require(require('path').resolve(process.env.NODEM_DIR));
const db = new nodem.Gtm();
const opened = db.open({
  routinesPath: `${process.env.NODEM_ROUTINES} ${process.env.gtmroutines}`,
  callinTable: `${process.env.NODEM_DIR}/resources/nodem.ci`,
});
if (!opened.ok) throw new Error(`nodem open failed: ${JSON.stringify(opened)}`);
const setupS = Number(process.hrtime.bigint() - setupStart) / 1e9;

function checked(reply) {
  if (!reply.ok) throw new Error(`nodem: ${JSON.stringify(reply)}`);
  return reply;
}

const operations = {
  traverse() {
    let x = '';
    let count = 0;
    let sum = 0;
    while (count < limit) {
      x = checked(db.order({ global: 'BCAT', subscripts: ['lvd', x] })).result;
      if (x === '') break;
      count += 1;
      sum += Number(x);
    }
    return `${count} ${sum}`;
  },
  get() {
    let sum = 0;
    for (let i = 1; i <= limit; i += 1) sum += Number(checked(db.get({ global: 'BCAT', subscripts: ['lvd', i] })).data);
    return `${limit} ${sum}`;
  },
};

const run = operations[op];
const times = [];
const cpu = [];
let answer = null;
// Lock-step blocks: with BRIDGEBENCH_STEPPED=1, one iteration per "g" read on stdin, its seconds answered.
const stepped = process.env.BRIDGEBENCH_STEPPED === '1';
const go = Buffer.alloc(1);
if (stepped) fs.writeSync(1, 'bridgebench-stepped/1 ready\n');
for (let i = 0; i < iterations; i += 1) {
  if (stepped && (fs.readSync(0, go, 0, 1, null) !== 1 || go[0] !== 0x67)) {
    process.stderr.write(`callins.js: stepped mode: expected "g" before iteration ${i + 1}\n`);
    process.exit(2);
  }
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const got = run();
  const t1 = process.hrtime.bigint();
  const c1 = process.cpuUsage(c0);
  times.push(Number(t1 - t0) / 1e9);
  cpu.push((c1.user + c1.system) / 1e6);
  if (answer === null) answer = got;
  else if (got !== answer) {
    process.stderr.write(`callins.js: iteration ${i + 1} answered differently from iteration 1\n`);
    process.exit(3);
  }
  if (stepped) fs.writeSync(1, `${times[i]}\n`);
}
const vm = `Node.js ${process.version}; ${db.version()}`;
db.close();
process.stdout.write(`${JSON.stringify({
  protocol: 'bridgebench/1', times, answer, counters: { cpu_s: cpu }, setup_s: setupS,
  vm, clock: 'hrtime',
})}\n`);
