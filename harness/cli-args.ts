/**
 * Option parsing shared by the CLI commands: node's own parser, with its
 * errors turned into a UsageError that carries the command's usage text
 * (exit status 2).
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { UsageError } from './errors.ts';

export function parseCommandLine<T extends ParseArgsConfig>(config: T, usage: string): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n${usage}`);
  }
}
