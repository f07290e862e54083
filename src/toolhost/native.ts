/**
 * The native tools IRIS ships, registered into a tool host under their `[tools]` switches.
 */
import calculator from '../../tools/calculator.js';
import time from '../../tools/time.js';
import timers from '../../tools/timers.js';
import type { Announcement, Notice, ToolModule, ToolSet } from './api.js';
import type { ToolHost } from './host.js';
import type { Logger } from '../log.js';
import { createJsonStore } from './store.js';

export const NATIVE_MODULES: readonly ToolModule[] = [time, calculator, timers];

export interface NativeOptions {
  /** The home zone in force (read at each use: a reload changes it). */
  homeZone: () => string;
  stateDir: string;
  log: Logger;
  announce: (announcement: Announcement) => void;
  /** Where tools' notices go (a timer started, for its room); default: nowhere. */
  notify?: (notice: Notice) => void;
  /** Epoch ms; default Date.now. */
  now?: () => number;
}

/** Create every native module and register its tools; returns the sets for their lifecycle. */
export function registerNativeTools(host: ToolHost, options: NativeOptions): ToolSet[] {
  return NATIVE_MODULES.map((module) => {
    const log = options.log.child(module.toggle);
    const set = module.create({
      get homeZone() {
        return options.homeZone();
      },
      log,
      announce: options.announce,
      notify: options.notify ?? (() => undefined),
      store: (name, version) => createJsonStore(options.stateDir, name, log, version),
      now: options.now ?? (() => Date.now()),
    });
    for (const tool of set.tools) host.register(tool, { source: 'native', toggle: module.toggle });
    return set;
  });
}
