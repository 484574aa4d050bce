import autocannon from 'autocannon';
import { fork } from 'node:child_process';
if (process.argv.includes('--child')) {
  const [{ buildServer }, { openStore }, { SandboxForge }] = await Promise.all([import('../src/server/index.js'), import('../src/store/index.js'), import('../src/forge/sandbox.js')]);
  const Fastify = (await import('fastify')).default;
  const bare = Fastify(); bare.get('/', () => ({ ok: true })); bare.post('/', () => ({ ok: true }));
  const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });
  const store = await openStore({ sqlitePath: ':memory:' }); await store.addToken('local', 'bench-token');
  const app = await buildServer({ store, forge: new SandboxForge() });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  const s = app.railyard.service; await s.createQueue('local', { host: 'github.com', owner: 'acme', name: 'web' }, 'main');
  for (let n = 1; n <= 1000; n++) await s.submit('local', { host: 'github.com', owner: 'acme', name: 'web' }, 'main', n, {});
  process.send!({ bareUrl, apiUrl: address + '/v1' });
  process.on('disconnect', () => process.exit(0));
} else {
  const proc = fork(new URL(import.meta.url).pathname, ['--child'], { stdio: 'inherit', execArgv: [...process.execArgv, ...(process.env.PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : [])] });
  const r = await new Promise<any>((res) => proc.once('message', res));
  const headers = { 'x-api-token': 'bench-token', 'content-type': 'application/json' };
  const body = JSON.stringify({ repo: { host: 'github.com', owner: 'acme', name: 'web' }, targetBranch: 'main', pr: { number: 500 } });
  for (const [name, opts] of [['bare GET', { url: r.bareUrl }], ['bare POST', { url: r.bareUrl, method: 'POST', headers, body }], ['getSubmitted', { url: r.apiUrl + '/getSubmittedPullRequest', method: 'POST', headers, body }], ['status', { url: r.apiUrl + '/status' }]] as const) {
    if (process.env.ONLY && !name.includes(process.env.ONLY)) continue;
    const res = await autocannon({ connections: 16, duration: 5, ...(opts as object) } as any);
    console.log(name, res.requests.average, res.non2xx);
  }
  proc.disconnect();
}
