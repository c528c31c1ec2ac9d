/** @module `outpost version` (this client and the hub it talks to) and `outpost completion bash|zsh`. */
import type { Command } from 'commander';
import { buildInfo } from '../core/version.js';
import { HubClient } from './client.js';
import { resolveConnection } from './config.js';
import type { CliDeps } from './context.js';
import { CliError, UsageError } from './errors.js';
import { line, toJson } from './output.js';

/** Commands and the words that may follow each, from the command tree itself, so completion never goes stale. */
function commandTree(root: Command): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const walk = (cmd: Command, path: string) => {
    const words = [
      ...cmd.commands
        .filter((c) => !(c as unknown as { _hidden?: boolean })._hidden)
        .flatMap((c) => [c.name(), ...c.aliases()]),
      ...cmd.options.flatMap((o) => [o.long, o.short].filter((x): x is string => !!x)),
    ];
    out.set(path, words);
    for (const c of cmd.commands) walk(c, path ? `${path} ${c.name()}` : c.name());
  };
  walk(root, '');
  return out;
}

const KIND_WORDS = 'edges workloads placements projects edge workload placement project wl pl proj';
const NAMED = ['get', 'describe', 'delete'];

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** A bash completion script: subcommands and flags per command path, kinds after get/describe/delete, and object names from the hub. */
export function bashCompletion(root: Command): string {
  const tree = commandTree(root);
  const name = root.name();
  const fn = `_${name.replace(/[^A-Za-z0-9]/g, '_')}`;
  const words = [...tree].map(([path, w]) => {
    const extra = NAMED.includes(path) ? ` ${KIND_WORDS}${path === 'get' ? ' events' : ''}` : '';
    return `    ${q(path)}) echo ${q(w.join(' ') + extra)} ;;`;
  });
  const cmds = [...tree.keys()].filter((p) => p !== '').map(q);
  return `# ${name} completion for bash. Load it with:  source <(${name} completion bash)
# or install it:  ${name} completion bash > /etc/bash_completion.d/${name}
${fn}_words() {
  case "$1" in
${words.join('\n')}
  esac
}
${fn}_is_cmd() {
  case "$1" in
    ${cmds.join('|')}) return 0 ;;
  esac
  return 1
}
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" path="" i w next
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ "$w" == -* ]] && continue
    next="\${path:+$path }$w"
    if ${fn}_is_cmd "$next"; then path="$next"; fi
  done
  case "$path:$cur" in
    get:[!-]*|describe:[!-]*|delete:[!-]*|get:|describe:|delete:)
      case "$prev" in
        edge|edges|e|workload|workloads|wl|placement|placements|pl|project|projects|proj)
          COMPREPLY=( $(compgen -W "$(${name} get "$prev" -o name 2>/dev/null | sed 's#.*/##')" -- "$cur") )
          return ;;
      esac ;;
  esac
  COMPREPLY=( $(compgen -W "$(${fn}_words "$path")" -- "$cur") )
}
complete -F ${fn} ${name}
`;
}

/** zsh runs the bash script through bashcompinit. */
export function zshCompletion(root: Command): string {
  return `#compdef ${root.name()}
# ${root.name()} completion for zsh. Load it with:  source <(${root.name()} completion zsh)
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bashCompletion(root)}`;
}

export function registerMetaCommands(program: Command, deps: CliDeps): void {
  program
    .command('version')
    .description("print this client's version and the version of the hub it is logged in to")
    .option('-o, --output <format>', 'json for a machine-readable answer')
    .option('--client', 'only the client: do not ask the hub')
    .action(async (opts: { output?: string; client?: boolean }) => {
      if (opts.output !== undefined && opts.output !== 'json')
        throw new UsageError(`-o ${opts.output}: only json is supported`);
      const { version, commit } = buildInfo();
      const client = { version, commit, node: process.version };
      let hub: { url: string; version?: string; error?: string } | undefined;
      if (!opts.client) {
        try {
          const { conn } = await resolveConnection({ env: deps.env, homedir: deps.homedir });
          const h = await new HubClient(conn).get<{ version?: string }>('/healthz');
          hub = { url: conn.hub, version: h?.version };
        } catch (err) {
          hub = { url: '', error: (err as Error).message };
        }
      }
      if (opts.output === 'json') deps.stdout.write(toJson({ client, ...(hub ? { hub } : {}) }));
      else {
        line(deps.stdout, `Client Version: ${version} (commit ${commit}, node ${process.version})`);
        if (hub && !hub.error) line(deps.stdout, `Hub Version:    ${hub.version ?? 'unknown'} (${hub.url})`);
      }
      if (hub?.error) throw new CliError(`cannot read the hub's version: ${hub.error}`);
    });

  program
    .command('completion')
    .description('print a shell completion script: source <(outpost completion bash)')
    .argument('<shell>', 'bash or zsh')
    .addHelpText(
      'after',
      "\nExamples:\n  source <(outpost completion bash)            # this shell\n  outpost completion bash > /etc/bash_completion.d/outpost\n  echo 'source <(outpost completion zsh)' >> ~/.zshrc",
    )
    .action((shell: string, _opts: unknown, cmd: Command) => {
      let root = cmd;
      while (root.parent) root = root.parent;
      if (shell === 'bash') deps.stdout.write(bashCompletion(root));
      else if (shell === 'zsh') deps.stdout.write(zshCompletion(root));
      else throw new UsageError(`unknown shell "${shell}": use bash or zsh`);
    });
}
