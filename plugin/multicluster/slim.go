// The informers' transform: what the plugin never reads dropped from each
// object as it is queued, so that a relist's objects take less memory
// while they wait.

package multicluster

import (
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// slim is the informers' transform: it runs on each object as the reflector
// queues it, before conversion, and drops in place what the plugin never
// reads (managedFields, the annotations and labels it does not use, an
// endpoint's conditions other than ready, its topology and references).
// During a relist every object of a resource is in memory at once, in the
// list and in the queue; slim makes each of them smaller for that while. What the stores keep is the converted spec either way.
func slim(obj any) (any, error) {
	o, ok := obj.(meta.Object)
	if !ok {
		return obj, nil // a tombstone: already slimmed when it was queued
	}
	o.SetManagedFields(nil)
	switch x := obj.(type) {
	case *importObject:
		keepOnly(&x.Labels, labelServiceName)
		keepOnly(&x.Annotations, annotationDerivedService, annotationAWSDerived)
	case *discovery.EndpointSlice:
		keepOnly(&x.Labels, labelServiceName, labelSourceCluster)
		x.Annotations = nil
		x.OwnerReferences = nil
		for i := range x.Endpoints {
			e := &x.Endpoints[i]
			e.Conditions = discovery.EndpointConditions{Ready: e.Conditions.Ready}
			e.TargetRef, e.NodeName, e.Zone, e.Hints, e.DeprecatedTopology = nil, nil, nil, nil, nil
		}
	case *corev1.Service:
		// object.ToService, which converts it, reads no annotation.
		x.Annotations = nil
		x.Status = corev1.ServiceStatus{}
	}
	return obj, nil
}

// keepOnly deletes from *m every key but keep, and sets it to nil when
// nothing remains.
func keepOnly(m *map[string]string, keep ...string) {
	if len(*m) == 0 {
		*m = nil
		return
	}
	var kept map[string]string
	for _, k := range keep {
		if v, ok := (*m)[k]; ok {
			if kept == nil {
				kept = make(map[string]string, len(keep))
			}
			kept[k] = v
		}
	}
	*m = kept
}
