/**
 * Where a CPU profile's time went: self time by function and by file (or package), from a V8
 * .cpuprofile (`node --cpu-prof`, or the inspector's Profiler.stop as bench/api-v2-load.ts takes
 * with BENCH_PROFILE). Optionally per request: µs of CPU per request served while profiling.
 *
 *   npx tsx bench/cpu-profile.ts CPU.123.cpuprofile [top] [requests]
 */
import { readFile } from 'node:fs/promises';

export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples?: number[];
  timeDeltas?: number[];
  startTime: number;
  endTime: number;
}

/** Where a file's time goes: its package for node_modules, node: internals, else its path in the repository. */
function areaOf(url: string): string {
  if (!url) return '(native / V8)';
  if (url.startsWith('node:')) return url;
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const rest = url.slice(modules + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const src = url.search(/\/(src|build|bench|test)\//);
  return src >= 0 ? url.slice(src + 1) : url.replace(/^file:\/\//, '');
}

function table(rows: [string, number][], total: number, top: number, requests?: number): string[] {
  return rows
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, us]) => {
      const perRequest = requests ? `${(us / requests).toFixed(2).padStart(7)} µs/req` : '';
      return `  ${((100 * us) / total).toFixed(1).padStart(5)} %  ${perRequest}  ${name}`;
    });
}

/** The profile's self time, top `top` functions and files, as printable lines. */
export function summarise(profile: CpuProfile, top = 25, requests?: number): string[] {
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    // A sample's time is the delta to the next one (V8 records the delta before it).
    const us = deltas[i + 1] ?? 0;
    const node = byNode.get(samples[i]!);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    const area = areaOf(url);
    const name = `${functionName || '(anonymous)'}  ${area}${url ? `:${lineNumber + 1}` : ''}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    byArea.set(area, (byArea.get(area) ?? 0) + us);
    busy += us;
  }
  return [
    `profile: ${((busy + idle) / 1000).toFixed(0)} ms sampled, ${(busy / 1000).toFixed(0)} ms not idle` +
      (requests ? `, ${requests} requests: ${(busy / requests).toFixed(1)} µs of CPU each` : ''),
    'self time by function (share of the time not idle):',
    ...table([...byFunction], busy, top, requests),
    'self time by file or package:',
    ...table([...byArea], busy, Math.min(top, 15), requests),
  ];
}

if (process.argv[1]?.endsWith('cpu-profile.ts')) {
  const [file, top, requests] = process.argv.slice(2);
  if (!file) {
    console.error('usage: npx tsx bench/cpu-profile.ts FILE.cpuprofile [top] [requests]');
    process.exit(2);
  }
  const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
  for (const line of summarise(profile, Number(top ?? 25), requests ? Number(requests) : undefined))
    console.log(line);
}
