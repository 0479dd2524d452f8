/** The database module: the one part of the reference server the harness may import. */
export { type Cluster, ClusterError, type ClusterMode, checkServer, freePort, startCluster } from './cluster.ts';
export { installSchema } from './install.ts';
