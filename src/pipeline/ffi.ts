/**
 * C libraries through koffi (a maintained FFI package with prebuilt binaries), for the engines
 * that call one in process: pocketsphinx.ts (libpocketsphinx) and phonemes.ts (libespeak-ng).
 */
export type Koffi = typeof import('koffi');
export type NativeLibrary = ReturnType<Koffi['load']>;

/**
 * koffi and the libraries `files`; when either cannot be loaded, the caller's error: `error`
 * makes it from a message, `missing` says which package to install.
 */
export async function loadNative(files: readonly string[], error: (message: string, cause: unknown) => Error, missing: string): Promise<{ koffi: Koffi; libs: NativeLibrary[] }> {
  let koffi: Koffi;
  try {
    koffi = (await import('koffi')).default;
  } catch (cause) {
    throw error(`the FFI package koffi cannot be loaded: ${String(cause)}`, cause);
  }
  try {
    return { koffi, libs: files.map((file) => koffi.load(file)) };
  } catch (cause) {
    throw error(missing, cause);
  }
}
