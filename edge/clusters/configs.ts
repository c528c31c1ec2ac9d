/**
 * @module What a cluster node is on disk (docs/clusters.md, "On the site"): the layout of
 * `DATA/clusters/NAME/`, the configuration files the node order turns into (kubeconfigs,
 * containerd's, the kubelet's, the CNI network), and the command line of each component. Pure:
 * the same order gives the same files and command lines, so a pass after a restart finds the
 * processes it started (their command lines) and rewrites nothing.
 *
 * Everything a node needs lives under its directory (binaries, PKI, state of etcd, containerd,
 * runc, the kubelet, CNI addresses), so two clusters' nodes on one host do not meet, and deleting
 * the directory leaves nothing of the node but its bridge interface (removed by name).
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { stringify } from 'yaml';
import type { ArtifactName, ClusterNodeOrder, ComponentName } from '../../core/cluster.js';

/** A node order without its sealed PKI (what the files and command lines are made from). */
export type NodeSpec = Omit<ClusterNodeOrder, 'pki'>;

export interface NodeLayout {
  root: string;
  pki: string;
  etc: string;
  run: string;
  logs: string;
  bin: string;
  /** Where an artifact is installed: by its digest, so another version stages beside it. */
  artifact(name: ArtifactName, digest: string): string;
  state: string;
}

export function nodeLayout(dataDir: string, cluster: string): NodeLayout {
  const root = path.join(dataDir, 'clusters', cluster);
  return {
    root,
    pki: path.join(root, 'pki'),
    etc: path.join(root, 'etc'),
    run: path.join(root, 'run'),
    logs: path.join(root, 'logs'),
    bin: path.join(root, 'bin'),
    artifact: (name, digest) => path.join(root, 'bin', `${name}-${digest.replace(/^sha256:/, '').slice(0, 12)}`),
    state: path.join(root, 'state.json'),
  };
}

/** The Linux bridge of a cluster's pods: named by the cluster's uid (15 characters at most). */
export function bridgeName(uid: string): string {
  return `ob-${createHash('sha256').update(uid).digest('hex').slice(0, 10)}`;
}

/**
 * The node's bridge: the control plane's named by the cluster's uid, a worker's by the uid and its
 * edge (two nodes of one cluster on one host each have their own, and remove only their own).
 */
export function nodeBridge(o: Pick<NodeSpec, 'uid' | 'role'>, edge: string): string {
  return o.role === 'control-plane' ? bridgeName(o.uid) : bridgeName(`${o.uid}/${edge}`);
}

/**
 * A node's kubelet's cgroup root, named as its bridge: its own, so two kubelets on one host (two
 * clusters' nodes, or two nodes of one) leave each other's pods alone.
 */
export const nodeCgroupRoot = (o: Pick<NodeSpec, 'uid' | 'role'>, edge: string): string =>
  `/outpost-${nodeBridge(o, edge)}`;

/** The first /24 of the pod CIDR: the control plane's pod addresses (the first node registered). */
function nodePodSubnet(podCidr: string): string {
  const [ip] = podCidr.split('/');
  const o = ip!.split('.');
  return `${o[0]}.${o[1]}.${o[2]}.0/24`;
}

/** The files a node order writes (besides the PKI), by path; their text is all a pass compares. */
export function nodeFiles(
  o: NodeSpec,
  edge: string,
  l: NodeLayout,
  nodeIp: string,
  /** A worker's pod subnet, once the controller-manager gave its node one (its CNI config waits for it). */
  podSubnet?: string,
): Map<string, string> {
  const files = new Map<string, string>();
  const pki = (f: string) => path.join(l.pki, f);
  // A worker reaches the API server on the control-plane node's address; its certificate names that edge.
  const server =
    o.role === 'worker' && o.apiServer
      ? `https://${o.apiServer.address}:${o.ports.apiServer}`
      : `https://127.0.0.1:${o.ports.apiServer}`;
  const serverName = o.role === 'worker' && o.apiServer ? { 'tls-server-name': o.apiServer.serverName } : {};
  const kubeconfig = (user: string, base: string) =>
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: o.cluster, cluster: { server, 'certificate-authority': pki('ca.crt'), ...serverName } }],
      users: [{ name: user, user: { 'client-certificate': pki(`${base}.crt`), 'client-key': pki(`${base}.key`) } }],
      contexts: [{ name: o.cluster, context: { cluster: o.cluster, user } }],
      'current-context': o.cluster,
    });
  files.set(path.join(l.etc, 'kubelet.kubeconfig'), kubeconfig(`system:node:${edge}`, 'kubelet-client'));
  if (o.role === 'control-plane') {
    files.set(path.join(l.etc, 'admin.kubeconfig'), kubeconfig('outpost-admin', 'admin'));
    files.set(
      path.join(l.etc, 'controller-manager.kubeconfig'),
      kubeconfig('system:kube-controller-manager', 'controller-manager'),
    );
    files.set(path.join(l.etc, 'scheduler.kubeconfig'), kubeconfig('system:kube-scheduler', 'scheduler'));
  }
  const runc = l.artifact('runc', o.spec.artifacts.runc.digest);
  const cni = l.artifact('cni-plugins', o.spec.artifacts['cni-plugins'].digest);
  files.set(
    path.join(l.etc, 'containerd.toml'),
    [
      'version = 2',
      `root = ${JSON.stringify(path.join(l.root, 'containerd', 'root'))}`,
      `state = ${JSON.stringify(path.join(l.run, 'containerd'))}`,
      '[grpc]',
      `  address = ${JSON.stringify(path.join(l.run, 'containerd.sock'))}`,
      '[metrics]',
      '  address = ""',
      '[plugins]',
      '  [plugins."io.containerd.grpc.v1.cri"]',
      `    sandbox_image = ${JSON.stringify(o.spec.pauseImage)}`,
      // Lowering oom_score_adj needs CAP_SYS_RESOURCE, which a container host may not give root.
      '    restrict_oom_score_adj = true',
      '    stream_server_address = "127.0.0.1"',
      '    stream_server_port = "0"',
      '    [plugins."io.containerd.grpc.v1.cri".containerd]',
      '      snapshotter = "overlayfs"',
      '      default_runtime_name = "runc"',
      '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]',
      '        runtime_type = "io.containerd.runc.v2"',
      '        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]',
      `          BinaryName = ${JSON.stringify(runc)}`,
      `          Root = ${JSON.stringify(path.join(l.run, 'runc'))}`,
      '          SystemdCgroup = false',
      '    [plugins."io.containerd.grpc.v1.cri".cni]',
      `      bin_dir = ${JSON.stringify(cni)}`,
      `      conf_dir = ${JSON.stringify(path.join(l.etc, 'cni'))}`,
      '  [plugins."io.containerd.internal.v1.opt"]',
      `    path = ${JSON.stringify(path.join(l.root, 'containerd', 'opt'))}`,
      '',
    ].join('\n'),
  );
  const subnet = o.role === 'control-plane' ? nodePodSubnet(o.spec.network.podCIDR) : podSubnet;
  if (subnet)
    files.set(
      path.join(l.etc, 'cni', '10-outpost.conflist'),
      JSON.stringify(
        {
          cniVersion: '0.4.0',
          name: `outpost-${o.cluster}`,
          plugins: [
            {
              type: 'bridge',
              bridge: nodeBridge(o, edge),
              isGateway: true,
              ipMasq: true,
              hairpinMode: true,
              ipam: {
                type: 'host-local',
                ranges: [[{ subnet }]],
                routes: [{ dst: '0.0.0.0/0' }],
                dataDir: path.join(l.root, 'cni', 'ipam'),
              },
            },
          ],
        },
        null,
        2,
      ) + '\n',
    );
  files.set(
    path.join(l.etc, 'kubelet.yaml'),
    stringify({
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      // Hosts without systemd, on cgroup v1, with swap (docs/clusters.md, "Requirements").
      cgroupDriver: 'cgroupfs',
      failCgroupV1: false,
      failSwapOn: false,
      address: nodeIp,
      port: o.ports.kubelet,
      healthzBindAddress: '127.0.0.1',
      healthzPort: o.ports.kubeletHealthz,
      cgroupRoot: nodeCgroupRoot(o, edge),
      readOnlyPort: 0,
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: pki('ca.crt') },
      },
      authorization: { mode: 'Webhook' },
      tlsCertFile: pki('kubelet.crt'),
      tlsPrivateKeyFile: pki('kubelet.key'),
      containerRuntimeEndpoint: `unix://${path.join(l.run, 'containerd.sock')}`,
      clusterDomain: 'cluster.local',
      maxPods: o.spec.kubelet.maxPods,
      featureGates: o.spec.kubelet.featureGates,
      resolvConf: '/etc/resolv.conf',
      // A site's disk is shared with everything else on it: evict only when it is nearly full.
      evictionHard: { 'memory.available': '50Mi', 'nodefs.available': '2%', 'imagefs.available': '2%' },
      imageGCHighThresholdPercent: 98,
      imageGCLowThresholdPercent: 95,
    }),
  );
  return files;
}

export interface ComponentCommand {
  name: ComponentName;
  argv: string[];
  /** Directories put first on PATH (containerd finds its shim there). */
  path?: string[];
}

/** Each component's command line, in start order (the role's components only). */
export function componentCommands(o: NodeSpec, edge: string, l: NodeLayout, nodeIp: string): ComponentCommand[] {
  const a = o.spec.artifacts;
  // An executable's path, or an archive's directory (containerd's).
  const bin = (n: ArtifactName) => l.artifact(n, a[n].digest);
  const pki = (f: string) => path.join(l.pki, f);
  const etc = (f: string) => path.join(l.etc, f);
  const p = o.ports;
  const cp = o.spec.controlPlane;
  const gates = (g: Record<string, boolean>) =>
    Object.keys(g).length
      ? [
          `--feature-gates=${Object.entries(g)
            .sort(([x], [y]) => (x < y ? -1 : 1))
            .map(([k, v]) => `${k}=${v}`)
            .join(',')}`,
        ]
      : [];
  const containerd: ComponentCommand = {
    name: 'containerd',
    argv: [path.join(bin('containerd'), 'containerd'), '--config', etc('containerd.toml')],
    path: [bin('containerd')],
  };
  const kubelet: ComponentCommand = {
    name: 'kubelet',
    argv: [
      bin('kubelet'),
      `--config=${etc('kubelet.yaml')}`,
      `--kubeconfig=${etc('kubelet.kubeconfig')}`,
      `--root-dir=${path.join(l.root, 'kubelet')}`,
      `--hostname-override=${edge}`,
      `--node-ip=${nodeIp}`,
    ],
  };
  if (o.role === 'worker') return [containerd, kubelet];
  const kubeconfigFlags = (f: string) => [
    `--kubeconfig=${etc(f)}`,
    `--authentication-kubeconfig=${etc(f)}`,
    `--authorization-kubeconfig=${etc(f)}`,
  ];
  return [
    containerd,
    {
      name: 'etcd',
      argv: [
        bin('etcd'),
        `--name=${edge}`,
        `--data-dir=${path.join(l.root, 'etcd')}`,
        `--listen-client-urls=http://127.0.0.1:${p.etcdClient}`,
        `--advertise-client-urls=http://127.0.0.1:${p.etcdClient}`,
        `--listen-peer-urls=http://127.0.0.1:${p.etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${p.etcdPeer}`,
        `--initial-cluster=${edge}=http://127.0.0.1:${p.etcdPeer}`,
        '--initial-cluster-state=new',
        '--logger=zap',
      ],
    },
    {
      name: 'kube-apiserver',
      argv: [
        bin('kube-apiserver'),
        `--etcd-servers=http://127.0.0.1:${p.etcdClient}`,
        // Every address: workers reach it on the node's (their kubelets' certificates say who they are).
        '--bind-address=0.0.0.0',
        '--advertise-address=127.0.0.1',
        `--secure-port=${p.apiServer}`,
        `--tls-cert-file=${pki('apiserver.crt')}`,
        `--tls-private-key-file=${pki('apiserver.key')}`,
        `--client-ca-file=${pki('ca.crt')}`,
        '--authorization-mode=Node,RBAC',
        `--enable-admission-plugins=${['NodeRestriction', ...cp.admissionPlugins].join(',')}`,
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${pki('sa.pub')}`,
        `--service-account-signing-key-file=${pki('sa.key')}`,
        `--service-cluster-ip-range=${o.spec.network.serviceCIDR}`,
        `--kubelet-client-certificate=${pki('apiserver-kubelet-client.crt')}`,
        `--kubelet-client-key=${pki('apiserver-kubelet-client.key')}`,
        // The kubelet's address is the host's (node-ip.ts), which the hub does not know when it makes
        // the kubelet's certificate: the API server does not check that certificate (kubeadm's
        // default too) until the node reports its address and the hub issues one for it.
        '--kubelet-preferred-address-types=InternalIP',
        '--allow-privileged=true',
        '--profiling=false',
        ...gates(cp.featureGates),
        ...Object.entries(cp.apiServerFlags)
          .sort(([x], [y]) => (x < y ? -1 : 1))
          .map(([k, v]) => `--${k}=${v}`),
      ],
    },
    {
      name: 'kube-controller-manager',
      argv: [
        bin('kube-controller-manager'),
        ...kubeconfigFlags('controller-manager.kubeconfig'),
        '--bind-address=127.0.0.1',
        `--secure-port=${p.controllerManager}`,
        // One control-plane node: nothing to elect, and a restart does not wait for a lease.
        '--leader-elect=false',
        `--service-account-private-key-file=${pki('sa.key')}`,
        `--root-ca-file=${pki('ca.crt')}`,
        '--use-service-account-credentials=true',
        `--service-cluster-ip-range=${o.spec.network.serviceCIDR}`,
        // Each node's pod subnet (node.spec.podCIDR): a worker's CNI config is written from it.
        '--allocate-node-cidrs=true',
        `--cluster-cidr=${o.spec.network.podCIDR}`,
        '--node-cidr-mask-size=24',
        '--profiling=false',
        ...gates(cp.featureGates),
      ],
    },
    {
      name: 'kube-scheduler',
      argv: [
        bin('kube-scheduler'),
        ...kubeconfigFlags('scheduler.kubeconfig'),
        '--bind-address=127.0.0.1',
        `--secure-port=${p.scheduler}`,
        '--leader-elect=false',
        '--profiling=false',
        ...gates(cp.featureGates),
      ],
    },
    kubelet,
  ];
}
