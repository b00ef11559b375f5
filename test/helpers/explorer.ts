import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local block explorer speaking the Etherscan/Blockscout `getabi` protocol
 * (a third party that cannot run here), with a few broken variants.
 */

export const VERIFIED = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
export const UNVERIFIED = '0x000000000000000000000000000000000000dEaD';
export const ERC20_ABI = [
  { type: 'function', name: 'balanceOf', stateMutability: 'view', inputs: [{ name: 'owner', type: 'address' }], outputs: [{ name: '', type: 'uint256' }] },
];
export const API_KEY = 'test-explorer-key-4f9a';

export function startExplorer() {
  const requests: URL[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://localhost');
    requests.push(url);
    const json = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    switch (url.pathname) {
      case '/api':
        if (url.searchParams.get('module') !== 'contract' || url.searchParams.get('action') !== 'getabi')
          return json({ status: '0', message: 'NOTOK', result: 'Error! Missing Or invalid Module name' });
        if (url.searchParams.get('address')?.toLowerCase() === VERIFIED.toLowerCase())
          return json({ status: '1', message: 'OK', result: JSON.stringify(ERC20_ABI) });
        return json({ status: '0', message: 'NOTOK', result: 'Contract source code not verified' });
      case '/any':
        // Every address verified: what a tenant filling the shared cache would look up.
        return json({ status: '1', message: 'OK', result: JSON.stringify(ERC20_ABI) });
      case '/huge': {
        // A reply that never ends within any sane size, streamed without a length.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"status":"1","message":"OK","result":"[');
        const chunk = ' '.repeat(64 * 1024);
        let sent = 0;
        const more = () => {
          while (sent < 3 * 1024 * 1024 && !res.destroyed) {
            sent += chunk.length;
            if (!res.write(chunk)) return res.once('drain', more);
          }
          if (!res.destroyed) res.end(']"}');
        };
        return more();
      }
      case '/garbage':
        return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>Bad gateway</html>');
      case '/bad-abi':
        return json({ status: '1', message: 'OK', result: '{not json' });
      case '/bad-key':
        return json({ status: '0', message: 'NOTOK', result: `Invalid API Key (${url.searchParams.get('apikey')})` });
      case '/down':
        return res.writeHead(503).end('maintenance');
      case '/hang':
        return; // never answers
      default:
        return res.writeHead(404).end();
    }
  });
  return new Promise<{ server: http.Server; url: string; requests: URL[] }>((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests }));
  });
}
