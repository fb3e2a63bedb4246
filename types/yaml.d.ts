/** A `.yaml` file imported as its text (esbuild's text loader; the same in tests). */
declare module '*.yaml' {
  const source: string;
  export default source;
}
