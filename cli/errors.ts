/**
 * @module The CLI's error types and exit codes: 0 success, 1 a failure the user must act on (the
 * hub said no, the object is missing, a rollout failed), 2 bad usage (unknown kind, bad flag).
 * main.ts maps errors to exit codes with `exitCodeOf`, the only place that exits.
 */
import { CommanderError, InvalidArgumentError } from 'commander';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** A failure with a message written for the user and the exit code it maps to. */
export class CliError extends Error {
  readonly exitCode: number;

  constructor(message: string, opts: { exitCode?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'CliError';
    this.exitCode = opts.exitCode ?? EXIT_FAILURE;
  }
}

/** The command line itself is wrong: exit code 2. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, { exitCode: EXIT_USAGE });
    this.name = 'UsageError';
  }
}

/**
 * The exit code for an error thrown by a command. Commander's own errors (missing argument, bad
 * option value through an argParser) are usage errors; help and version are not errors at all.
 */
export function exitCodeOf(err: unknown): number {
  if (err instanceof CommanderError) {
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help')
      return EXIT_OK;
    return EXIT_USAGE;
  }
  if (err instanceof CliError) return err.exitCode;
  return EXIT_FAILURE;
}

/**
 * Whether main.ts must print the error itself: commander has already printed its own errors, and a
 * CliError with an empty message (a watch that ended in failure after printing why) says nothing more.
 */
export function shouldPrintError(err: unknown): boolean {
  // Commander prints (and rethrows as a plain CommanderError) what its parsers reject; an
  // InvalidArgumentError that gets here was thrown by an action and has not been shown.
  if (err instanceof InvalidArgumentError) return true;
  if (err instanceof CommanderError) return false;
  return !(err instanceof CliError && err.message === '');
}

/** Runs a parser inside an action: its InvalidArgumentError becomes a UsageError (exit code 2, printed by main.ts). */
export function asUsage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw new UsageError(err.message);
    throw err;
  }
}

/**
 * A flag's value parser (commander's argParser) from a function that throws a plain Error naming
 * what is wrong: commander prints the flag, the value and that message, and exits 2.
 */
export function optionParser<T>(parse: (value: string) => T): (value: string) => T {
  return (value) => {
    try {
      return parse(value);
    } catch (err) {
      if (err instanceof InvalidArgumentError) throw err;
      throw new InvalidArgumentError((err as Error).message);
    }
  };
}

/**
 * The line main.ts prints for an error. A CliError's message is complete (it already says what
 * the cause was and what to do); other errors get their cause appended.
 */
export function formatError(err: unknown): string {
  if (err instanceof CliError) return err.message;
  if (err instanceof Error) return err.message + (err.cause instanceof Error ? `: ${err.cause.message}` : '');
  return String(err);
}
