/** Hub replicas on an in-memory hub database (the same suite runs on PostgreSQL); the advertise URL. */
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { hubReplicaSuite } from '../../test/fixtures/state-suites.js';
import { advertiseUrlOf, parseAdvertiseUrl } from './replicas.js';

hubReplicaSuite(() => memoryHubState().db);

describe('the advertise URL', () => {
  it('defaults to the hub URL on one address, else the machine name', () => {
    expect(advertiseUrlOf('10.0.0.5', 'https://10.0.0.5:7443', 'https', 7443)).toBe('https://10.0.0.5:7443');
    expect(advertiseUrlOf('0.0.0.0', 'https://localhost:7443', 'https', 7443)).toBe(`https://${os.hostname()}:7443`);
    expect(advertiseUrlOf('::', 'http://127.0.0.1:80', 'http', 80)).toBe(`http://${os.hostname()}:80`);
  });

  it('--advertise-url takes an http(s) origin only, and says what to give', () => {
    expect(parseAdvertiseUrl('https://hub-1.internal:7443/')).toBe('https://hub-1.internal:7443');
    expect(parseAdvertiseUrl('http://10.0.0.5:7443')).toBe('http://10.0.0.5:7443');
    expect(() => parseAdvertiseUrl('hub-1:7443')).toThrow(/--advertise-url hub-1:7443: give only https:\/\/HOST:PORT/);
    expect(() => parseAdvertiseUrl('nonsense')).toThrow(/not a URL; give the URL other hub replicas reach this one at/);
    expect(() => parseAdvertiseUrl('https://hub-1:7443/api')).toThrow(/no path, query or credentials/);
    expect(() => parseAdvertiseUrl('https://u:p@hub-1:7443')).toThrow(/no path, query or credentials/);
  });
});
