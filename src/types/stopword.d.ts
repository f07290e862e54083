/** The one list IRIS uses from `stopword` (it ships no types). */
declare module 'stopword' {
  /** English stop words, lower case. */
  export const eng: string[];
}
