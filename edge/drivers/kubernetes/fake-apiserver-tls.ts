/**
 * @module A throwaway self-signed serving certificate for the Kubernetes API server stand-in (test
 * support). TLS is not optional in practice: kubectl (client-go) does not send a bearer token to
 * a plain-http server, so the stand-in serves HTTPS and pins its certificate in the kubeconfig.
 */
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

export interface ServingCert {
  certPem: string;
  keyPem: string;
}

export async function selfSignedCert(): Promise<ServingCert> {
  x509.cryptoProvider.set(webcrypto as unknown as webcrypto.Crypto & Parameters<typeof x509.cryptoProvider.set>[0]);
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const notBefore = new Date(Date.now() - 60_000);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Date.now().toString(16),
    name: 'CN=outpost-kubernetes-standin',
    notBefore,
    notAfter: new Date(notBefore.getTime() + 7 * 24 * 3600_000),
    keys,
    signingAlgorithm: alg,
    extensions: [
      // Self-signed and used as its own CA by the kubeconfig, as kubeadm's and k3s's CAs are.
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: 'ip', value: '127.0.0.1' },
        { type: 'dns', value: 'localhost' },
      ]),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`;
  return { certPem: cert.toString('pem'), keyPem };
}
