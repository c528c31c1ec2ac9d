import net from 'node:net';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { listenersIn } from './port-owner.js';

// As the kernel writes them (net/ipv4/tcp_ipv4.c, net/ipv6/tcp_ipv6.c): a header, then one line per socket.
const TCP =
  Buffer.from(`  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1B58 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 000000002e28da96 100 0 0 10 0
   1: 0100007F:1B58 0100007F:9703 06 00000000:00000000 03:00000EFC 00000000     0        0 0 3 00000000c611baa0
   2: 0100007F:9703 0100007F:1B58 01 00000000:00000000 00:00000000 00000000     0        0 5151 1 00000000c611baa1 20 4 30 10 -1
   3: 0100007F:1B59 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 6161 1 000000002e28da97 100 0 0 10 0
10000: 0100007F:1B58 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 7171 1 000000002e28da98 100 0 0 10 0
`);
const TCP6 =
  Buffer.from(`  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1B58 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 8181 1 0000000011111111 100 0 0 10 0
   1: 00000000000000000000000001000000:1B58 00000000000000000000000001000000:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 9191 1 0000000022222222 20 4 30 10 -1
`);

describe('the listeners of a port in /proc/net/tcp', () => {
  it('finds the sockets in LISTEN on the port (any address, a five-digit slot), not its connections', () => {
    expect(listenersIn(TCP, 7000)).toEqual(['4242', '7171']);
    expect(listenersIn(TCP, 7001)).toEqual(['6161']);
    expect(listenersIn(TCP6, 7000)).toEqual(['8181']);
    expect(listenersIn(TCP, 38659)).toEqual([]);
    expect(listenersIn(Buffer.alloc(0), 7000)).toEqual([]);
  });

  it("finds a listener of this process in the host's own table", async () => {
    const srv = net.createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    try {
      const { port } = srv.address() as net.AddressInfo;
      expect(listenersIn(readFileSync('/proc/net/tcp'), port)).toHaveLength(1);
    } finally {
      srv.close();
    }
  });
});
