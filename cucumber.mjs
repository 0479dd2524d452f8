// Cucumber configuration. The harness CLI (`synchro-conformance run`) adds the
// message formatter and tag filters; this default keeps `npx cucumber-js` usable
// on its own for a quick dry run of the features.
export default {
  paths: ['features/**/*.feature'],
  import: ['steps/**/*.ts'],
  format: ['progress'],
};
