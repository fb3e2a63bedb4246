/** A `.lua` file imported as its source text (esbuild's text loader; the same in tests). */
declare module '*.lua' {
  const source: string;
  export default source;
}
