/**
 * Where the cluster's pods reach this host (host-address.ts), from the Nodes as the API server
 * gives them and this host's addresses: the pods' bridge gateway of this host's node first, else
 * its InternalIP, never loopback, and why when there is none.
 */
import { describe, expect, it } from 'vitest';
import { firstAddress, pickNodeAddress } from './host-address.js';
import type { KObj } from './objects.js';

const node = (name: string, internal: string[], podCIDR?: string): KObj => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name },
  spec: podCIDR ? { podCIDR, podCIDRs: [podCIDR] } : {},
  status: {
    addresses: [...internal.map((address) => ({ type: 'InternalIP', address })), { type: 'Hostname', address: name }],
  },
});

describe('the address of this host the pods reach', () => {
  it('the first address of a pod CIDR', () => {
    expect(firstAddress('10.42.0.0/24')).toBe('10.42.0.1');
    expect(firstAddress('10.244.3.0/24')).toBe('10.244.3.1');
    expect(firstAddress('10.88.0.0/16')).toBe('10.88.0.1');
    expect(firstAddress('10.42.0.7/24')).toBe('10.42.0.1');
    expect(firstAddress('fd00::/64')).toBeUndefined();
  });

  it("this host's node's bridge gateway when this host has it, else its InternalIP", () => {
    const nodes = [node('other', ['192.168.1.20'], '10.42.1.0/24'), node('here', ['192.168.1.10'], '10.42.0.0/24')];
    expect(pickNodeAddress(nodes, new Set(['127.0.0.1', '192.168.1.10', '10.42.0.1']))).toEqual({
      address: '10.42.0.1',
    });
    // No bridge with the gateway on this host (a CNI without one): the InternalIP.
    expect(pickNodeAddress(nodes, new Set(['127.0.0.1', '192.168.1.10']))).toEqual({ address: '192.168.1.10' });
    // Another node's gateway is not this host's node's.
    expect(pickNodeAddress(nodes, new Set(['192.168.1.10', '10.42.1.1']))).toEqual({ address: '192.168.1.10' });
  });

  it('says why when no node is this host or only by loopback', () => {
    expect(pickNodeAddress([node('far', ['10.0.0.9'])], new Set(['127.0.0.1', '192.168.1.10']))).toEqual({
      why: "none of the nodes' InternalIPs (10.0.0.9) is a non-loopback address of this host",
    });
    expect(pickNodeAddress([node('loop', ['127.0.0.1'])], new Set(['127.0.0.1']))).toEqual({
      why: "none of the nodes' InternalIPs (127.0.0.1) is a non-loopback address of this host",
    });
    expect(pickNodeAddress([], new Set(['127.0.0.1']))).toEqual({
      why: 'the cluster lists no node with an InternalIP',
    });
  });
});
