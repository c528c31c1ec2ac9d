/**
 * @module `outpost describe package NAME`: a package of the catalog in detail: its versions with
 * their scan verdicts and what each depends on (a Helm chart: its subcharts), the newest version's parameters (secret ones
 * marked, never a value) and profiles, which placements deploy which version on how many edges,
 * and the package's events (Published, ScanClean, Quarantined, ScanPending).
 */
import type { PackageVersionView } from '../core/api/types.js';
import type { PackagePlacementView } from '../core/api/views.js';
import type { Parameter } from '../core/package.js';
import { scanText, type PackageObject } from './cmd-package.js';
import { eventsBlock, fields, section, type DescribeOptions } from './describe-blocks.js';
import { formatTable } from './output.js';
import { age, NONE } from './views.js';

/** What stands in for a secret parameter's value: secrets are never printed (docs/catalog.md). */
const REDACTED = '<redacted>';

type Version = PackageObject['status']['versions'][number];

/** What a version depends on: its `dependsOn`, or a Helm chart's subcharts with their versions. */
function dependsOn(v: Pick<PackageVersionView, 'dependsOn' | 'chart'>): string {
  if (v.chart)
    return v.chart.dependencies.length
      ? `subcharts ${v.chart.dependencies.map((d) => `${d.name} ${d.version}`).join(', ')}`
      : '-';
  return v.dependsOn?.length ? v.dependsOn.map((d) => `${d.name} ${d.version}`).join(', ') : '-';
}

/** The values a parameter accepts beyond its type: `a|b`, `1..10`, `/^[a-z]+$/`. */
function allowed(p: Parameter): string {
  const parts: string[] = [];
  // The choices of a secret parameter would tell its value.
  if (p.enum) parts.push(p.secret ? REDACTED : p.enum.map(String).join('|'));
  if (p.minimum !== undefined || p.maximum !== undefined) parts.push(`${p.minimum ?? ''}..${p.maximum ?? ''}`);
  if (p.pattern !== undefined) parts.push(`/${p.pattern}/`);
  return parts.join(' ') || '-';
}

function parametersBlock(v: Version): string {
  if (!v.parameters?.length) return `${NONE}\n`;
  return formatTable(
    ['NAME', 'TYPE', 'REQUIRED', 'SECRET', 'DEFAULT', 'ALLOWED', 'DESCRIPTION'],
    v.parameters.map((p) => [
      p.name,
      p.type,
      p.required ? 'yes' : 'no',
      p.secret ? 'yes' : 'no',
      p.default === undefined ? '-' : p.secret ? REDACTED : String(p.default),
      allowed(p),
      p.description ?? '',
    ]),
  );
}

function profilesBlock(v: Version): string {
  const profiles = Object.entries(v.profiles ?? {});
  if (profiles.length === 0) return `${NONE}\n`;
  const secret = new Set((v.parameters ?? []).filter((p) => p.secret).map((p) => p.name));
  return fields(
    profiles.map(([name, values]) => [
      name,
      Object.entries(values)
        .map(([k, x]) => `${k}=${secret.has(k) ? REDACTED : String(x)}`)
        .join(', ') || '(no values)',
    ]),
  );
}

/** `2 (w1, w2)`, `25 (w1, ..., w20, and 5 more)`, `0 (no edge yet)`. */
function edgesText(p: PackagePlacementView): string {
  if (p.edgeCount === 0) return '0 (no edge yet)';
  const more = p.edgeCount - p.edges.length;
  return `${p.edgeCount} (${p.edges.join(', ')}${more > 0 ? `, and ${more} more` : ''})`;
}

function placementsBlock(versions: Version[]): string {
  const rows = versions.flatMap((v) =>
    (v.placements ?? []).map((p) => [p.placement, v.version, p.versionRange, p.profile ?? '-', edgesText(p)]),
  );
  if (rows.length === 0) return `${NONE}\n`;
  return formatTable(['PLACEMENT', 'VERSION', 'RANGE', 'PROFILE', 'EDGES'], rows);
}

export function describePackage(o: PackageObject, opts: DescribeOptions): string {
  const { now } = opts;
  const versions = o.status.versions;
  const newest = versions[0];
  let out = fields([
    ['Name', o.metadata.name],
    ['Kind', newest?.chart ? 'Package (Helm chart)' : 'Package'],
    ['Project', o.metadata.project],
    ['Latest', o.status.latest || '-'],
    ['Description', newest?.description],
    ...(newest?.chart
      ? ([
          ['App version', newest.chart.appVersion],
          [
            'Pulled from',
            newest.chart.source
              ? `${newest.chart.source.reference} (${newest.chart.source.manifestDigest})`
              : undefined,
          ],
        ] as [string, string | undefined][])
      : []),
  ]);
  out += section(
    'Versions',
    formatTable(
      ['VERSION', 'SCAN', 'SIGNATURE DB', 'DEPENDS ON', 'AGE'],
      versions.map((v) => [
        v.version,
        scanText(v.scan),
        v.scan.engine ?? (v.scan.error ? `(${v.scan.error})` : '-'),
        dependsOn(v),
        age(v.publishedAt, now),
      ]),
      { color: opts.color, colorColumns: ['SCAN'] },
    ),
  );
  if (newest) {
    // Older versions may take other parameters: `get package NAME -o yaml` has each version's.
    out += section(`Parameters of ${newest.version}`, parametersBlock(newest));
    out += section(`Profiles of ${newest.version}`, profilesBlock(newest));
  }
  out += section('Placements', placementsBlock(versions));
  out += eventsBlock(opts.events, now);
  return out;
}
