/** An `.html` file imported as its text (esbuild's text loader; the same in tests). */
declare module '*.html' {
  const source: string;
  export default source;
}
