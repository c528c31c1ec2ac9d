/**
 * @module A cluster's PKI, made by the hub (docs/clusters.md, "PKI"): a CA per cluster (P-256, ten
 * years), and per node the certificates its components present and the keys that go with them,
 * each for one year: the API server's serving certificate (the names and addresses it is reached
 * by), its client certificate for the kubelets, the service-account key pair, the admin's,
 * controller-manager's and scheduler's client certificates, and the kubelet's serving and client
 * certificates (`system:node:EDGE` in `system:nodes`, as the Node authorizer expects). Keys are
 * PKCS#8 PEM. The hub keeps them sealed with its key (hub/state/clusters.ts) and seals a node's
 * bundle to its edge for the spec: the CRDT history never holds a key in clear.
 */
import net from 'node:net';
import { createPrivateKey, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import type { NodeRole, PkiBundle } from '../../core/cluster.js';

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 86_400_000;
const CA_LIFETIME_MS = 3650 * DAY;
const LEAF_LIFETIME_MS = 365 * DAY;
/** As the hub's own certificates: a node whose clock lags a little still accepts them. */
const BACKDATE_MS = DAY;

export interface ClusterCa {
  caPem: string;
  caKeyPem: string;
}

async function keyPair(): Promise<webcrypto.CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
}

async function privatePem(key: webcrypto.CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

async function publicPem(key: webcrypto.CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await webcrypto.subtle.exportKey('spki', key), 'PUBLIC KEY');
}

export async function createClusterCa(cluster: string, now = Date.now()): Promise<ClusterCa> {
  const keys = await keyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=outpost-cluster-ca:${cluster}@${Math.floor(now / 1000)}`,
    keys,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + CA_LIFETIME_MS),
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { caPem: cert.toString('pem') + '\n', caKeyPem: await privatePem(keys.privateKey) };
}

interface Leaf {
  cn: string;
  org?: string;
  usage: 'server' | 'client';
  names?: string[];
}

async function issue(ca: ClusterCa, leaf: Leaf, now: number): Promise<{ cert: string; key: string }> {
  const caCert = new x509.X509Certificate(ca.caPem);
  const signingKey = await webcrypto.subtle.importKey(
    'pkcs8',
    createPrivateKey(ca.caKeyPem).export({ type: 'pkcs8', format: 'der' }),
    ALG,
    false,
    ['sign'],
  );
  const keys = await keyPair();
  const escape = (v: string) => v.replace(/[,+"\\<>;=]/g, (c) => `\\${c}`);
  const cert = await x509.X509CertificateGenerator.create({
    subject: `CN=${escape(leaf.cn)}${leaf.org ? `, O=${escape(leaf.org)}` : ''}`,
    issuer: caCert.subject,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(Math.min(now + LEAF_LIFETIME_MS, caCert.notAfter.getTime())),
    publicKey: keys.publicKey,
    signingKey,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([
        leaf.usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth,
      ]),
      ...(leaf.names?.length
        ? [
            new x509.SubjectAlternativeNameExtension(
              leaf.names.map((h) => ({ type: net.isIP(h) ? ('ip' as const) : ('dns' as const), value: h })),
            ),
          ]
        : []),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
    ],
  });
  return { cert: cert.toString('pem') + '\n', key: await privatePem(keys.privateKey) };
}

/** The first address of a service CIDR: the `kubernetes` Service's ClusterIP, which the API server's certificate names. */
export function firstServiceIp(serviceCidr: string): string {
  const [ip] = serviceCidr.split('/');
  const o = ip!.split('.').map(Number);
  return `${o[0]}.${o[1]}.${o[2]}.${o[3]! + 1}`;
}

/** A node's bundle (core/cluster.ts PKI_FILES): a control plane's every file, a worker's the kubelet's. */
export async function nodeBundle(
  ca: ClusterCa,
  edge: string,
  role: NodeRole,
  serviceCidr: string,
  now = Date.now(),
): Promise<PkiBundle> {
  const files: PkiBundle = { 'ca.crt': ca.caPem };
  const put = (base: string, kp: { cert: string; key: string }) => {
    files[`${base}.crt` as keyof PkiBundle] = kp.cert;
    files[`${base}.key` as keyof PkiBundle] = kp.key;
  };
  put('kubelet', await issue(ca, { cn: edge, usage: 'server', names: [edge, 'localhost', '127.0.0.1'] }, now));
  put('kubelet-client', await issue(ca, { cn: `system:node:${edge}`, org: 'system:nodes', usage: 'client' }, now));
  if (role === 'control-plane') {
    put(
      'apiserver',
      await issue(
        ca,
        {
          cn: 'kube-apiserver',
          usage: 'server',
          names: [
            'kubernetes',
            'kubernetes.default',
            'kubernetes.default.svc',
            'kubernetes.default.svc.cluster.local',
            'localhost',
            edge,
            '127.0.0.1',
            firstServiceIp(serviceCidr),
          ],
        },
        now,
      ),
    );
    put(
      'apiserver-kubelet-client',
      await issue(ca, { cn: 'kube-apiserver-kubelet-client', org: 'system:masters', usage: 'client' }, now),
    );
    put('admin', await issue(ca, { cn: 'outpost-admin', org: 'system:masters', usage: 'client' }, now));
    put('controller-manager', await issue(ca, { cn: 'system:kube-controller-manager', usage: 'client' }, now));
    put('scheduler', await issue(ca, { cn: 'system:kube-scheduler', usage: 'client' }, now));
    const sa = await keyPair();
    files['sa.key'] = await privatePem(sa.privateKey);
    files['sa.pub'] = await publicPem(sa.publicKey);
  }
  return files;
}
