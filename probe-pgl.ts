import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { readFileSync, cpSync, rmSync, existsSync } from 'node:fs';
const st = () => { const s = readFileSync('/proc/self/status', 'utf8'); const g = (k: string) => Math.round(Number(s.match(new RegExp(k + ':\\s+(\\d+)'))![1]) / 1024); return `rss ${g('VmRSS')} anon ${g('RssAnon')} hwm ${g('VmHWM')}`; };
const dir = '/tmp/probe/pgl-data';
if (!existsSync(dir)) { const p = await PGlite.create(dir, { extensions: { vector } }); await p.exec('create extension if not exists vector; create table t(id int primary key, e vector(1024))'); await p.close(); console.log('created'); process.exit(0); }
console.log('start', st());
const pg = await PGlite.create(dir, { extensions: { vector }, postgresqlconf: ['shared_buffers=16MB'] } as any);
console.log('open', st());
await pg.query("select '[1,2,3]'::vector");
console.log('vec', st());
const v = '[' + Array.from({ length: 1024 }, (_, i) => (i % 7) / 7).join(',') + ']';
const t0 = performance.now();
for (let b = 0; b < 20; b++) { await pg.query(`insert into t select g, $1::vector from generate_series(${b * 200}, ${b * 200 + 199}) g on conflict (id) do update set e = excluded.e`, [v]); }
console.log("work", st(), "ms", Math.round(performance.now() - t0));
await new Promise((r) => setTimeout(r, 3000));
console.log('idle', st());
await pg.close();
