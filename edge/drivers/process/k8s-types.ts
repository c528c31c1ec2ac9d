/**
 * @module The subset of Kubernetes object fields the process driver reads. Manifests arrive as
 * loose JSON, so every field is optional here and checked in `plan.ts`.
 */

export interface KeyRef {
  name?: string;
  key?: string;
  optional?: boolean;
}

export interface EnvVar {
  name?: string;
  value?: string;
  valueFrom?: {
    configMapKeyRef?: KeyRef;
    secretKeyRef?: KeyRef;
    fieldRef?: { fieldPath?: string };
    resourceFieldRef?: unknown;
  };
}

export interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name?: string; optional?: boolean };
  secretRef?: { name?: string; optional?: boolean };
}

export interface K8sProbe {
  exec?: { command?: string[] };
  httpGet?: {
    path?: string;
    port?: number | string;
    host?: string;
    scheme?: string;
    httpHeaders?: { name: string; value: string }[];
  };
  tcpSocket?: { port?: number | string; host?: string };
  grpc?: unknown;
  initialDelaySeconds?: number;
  periodSeconds?: number;
  timeoutSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
}

export interface K8sContainer {
  name?: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVar[];
  envFrom?: EnvFromSource[];
  ports?: { containerPort?: number; name?: string; protocol?: string }[];
  volumeMounts?: { name?: string; mountPath?: string; subPath?: string; readOnly?: boolean }[];
  readinessProbe?: K8sProbe;
  livenessProbe?: K8sProbe;
  startupProbe?: K8sProbe;
}

export interface KeyToPath {
  key?: string;
  path?: string;
  mode?: number;
}

export interface K8sVolume {
  name?: string;
  configMap?: { name?: string; items?: KeyToPath[]; optional?: boolean; defaultMode?: number };
  secret?: { secretName?: string; items?: KeyToPath[]; optional?: boolean; defaultMode?: number };
  emptyDir?: Record<string, unknown>;
  hostPath?: { path?: string };
}

export interface K8sPodSpec {
  containers?: K8sContainer[];
  initContainers?: K8sContainer[];
  restartPolicy?: string;
  terminationGracePeriodSeconds?: number;
  volumes?: K8sVolume[];
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: {
    replicas?: number;
    template?: { metadata?: { labels?: Record<string, string> }; spec?: K8sPodSpec };
  } & K8sPodSpec;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  binaryData?: Record<string, string>;
}
