/** `wink-porter2-stemmer` ships no types: one function, a word to its Porter2 (Snowball English) stem. */
declare module 'wink-porter2-stemmer' {
  const stem: (word: string) => string;
  export default stem;
}
