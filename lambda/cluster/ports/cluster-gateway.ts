// Everything a use case may ask of the cluster, as one type: the adapter (adapters/kubernetes/gateway.ts)
// builds one; each use case names only the ports it needs.
import { type ChoiceGateway } from './choice-gateway.js';
import { type DrainabilityGateway } from './drainability-gateway.js';
import { type OutOfServiceGateway } from './out-of-service-gateway.js';
import { type RepairGateway } from './repair-gateway.js';
import { type LoadBalancerSources } from './load-balancer-sources.js';
import { type NodeGateway } from './node-gateway.js';
import { type PodGateway } from './pod-gateway.js';
import { type EventRecorder } from './event-recorder.js';
import { type VolumeGateway } from './volume-gateway.js';
import { type TargetReadingsSource } from './target-readings.js';

/** Everything a use case may ask of the cluster. */
export type ClusterGateway = NodeGateway &
  PodGateway &
  EventRecorder &
  VolumeGateway &
  LoadBalancerSources &
  DrainabilityGateway &
  ChoiceGateway &
  OutOfServiceGateway &
  RepairGateway &
  TargetReadingsSource;
