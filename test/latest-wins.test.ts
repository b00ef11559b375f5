import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { latestWins } from '../src/http/latest-wins.ts';

/**
 * The analytics event stream's writer, on a real socket whose reader stops
 * reading: before it, every summary sent to a stalled dashboard tab stayed in
 * the gateway's memory once the kernel's buffers (about 4 MB on loopback) were
 * full. The stream sends small summaries a few times a second, so this drives
 * the writer with 256 KiB messages to reach the full buffers quickly.
 */

const CHUNK = 256 * 1024;
const message = (i: number) => `msg ${i} ${'x'.repeat(CHUNK - 20)}\n`;

const closers: (() => void)[] = [];
afterEach(() => closers.splice(0).forEach((close) => close()));

/** A server whose one response is handed to the test, and a raw client that has not read anything yet. */
async function pausedConnection() {
  let response!: http.ServerResponse;
  const ready = new Promise<void>((resolve) => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.flushHeaders();
      response = res;
      resolve();
    });
    server.listen(0, '127.0.0.1', () => {
      const client = net.connect((server.address() as AddressInfo).port, '127.0.0.1', () => {
        client.write('GET / HTTP/1.1\r\nHost: test\r\n\r\n');
      });
      client.pause();
      closers.push(() => {
        client.destroy();
        server.close();
        server.closeAllConnections();
      });
      clientSocket = client;
    });
  });
  let clientSocket!: net.Socket;
  await ready;
  return { response, client: clientSocket };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('latestWins', () => {
  it('holds one message for a reader that stopped, and sends the newest when it reads again', async () => {
    const { response, client } = await pausedConnection();
    const out = latestWins(response, 60_000);
    let most = 0;
    let waited = false;
    for (let i = 0; i < 48; i++) {
      out.offer(message(i));
      waited ||= out.waiting;
      most = Math.max(most, response.writableLength);
      await tick();
    }
    // 12 MiB offered: the kernel took a few MiB, the rest waited as one message at a time.
    expect(waited).toBe(true);
    expect(most).toBeLessThanOrEqual(2 * CHUNK);

    let text = '';
    client.on('data', (data: Buffer) => (text += data.toString('latin1')));
    client.resume();
    await expect.poll(() => text.includes('msg 47 '), { timeout: 20_000 }).toBe(true);
    const seen = [...text.matchAll(/msg (\d+) /g)].map((m) => Number(m[1]));
    expect(seen.at(-1)).toBe(47);
    // Those written before the socket filled arrive in order; those replaced while it was full never do.
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(seen.length).toBeLessThan(48);
  }, 30_000);

  it('closes the connection of a reader that takes nothing for stallMs', async () => {
    const { response, client } = await pausedConnection();
    const out = latestWins(response, 300);
    const closed = new Promise<void>((resolve) => response.once('close', () => resolve()));
    for (let i = 0; i < 48 && !out.waiting; i++) {
      out.offer(message(i));
      await tick();
    }
    expect(out.waiting).toBe(true);
    await closed;
    expect(response.destroyed).toBe(true);
    // The reader, reading again, finds the connection ended rather than a backlog.
    const ended = new Promise<void>((resolve) => client.once('close', () => resolve()));
    client.resume();
    await ended;
  }, 30_000);
});
