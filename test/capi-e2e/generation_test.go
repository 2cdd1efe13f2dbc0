package capie2e

// What differs between the suite's two generations: here Cluster API v1.10
// and the RKE2 providers v0.21 (contract v1beta1); v1beta2/generation_test.go
// has v1.14 and v0.25's.

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/v1beta1"
	"sigs.k8s.io/cluster-api/util/conditions"
)

// clusterClassSource returns the ClusterClass file for the repository:
// templates/clusterclass-harvester-rke2.yaml as it is (RKE2 API v1beta1).
func clusterClassSource(path, _ string) string { return path }

// repositoryVersion names the local repository's release: one of CAPHV's 0.3
// series, contract v1beta1 in metadata.yaml. clusterctl v1.10 takes only
// v1beta1-contract releases (it would find none in the current series, 0.11,
// v1beta2); on such a core the 0.3 series is what clusterctl offers users
// (docs/release.md).
func repositoryVersion(string) string { return "v0.3.0" }

// The RKE2ControlPlane's fields the waiters read (waiters_test.go).
var (
	initializedField   = []string{"status", "initialized"}
	readyReplicaFields = []string{"readyReplicas"}
	readyFlag          = []string{"status", "ready"}
)

// controlPlaneOf returns the Cluster and its control-plane object (the
// reference names its apiVersion), or an error to retry on.
func controlPlaneOf(ctx context.Context, c client.Client, cluster *clusterv1.Cluster) (*clusterv1.Cluster, *unstructured.Unstructured, error) {
	current := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cluster), current); err != nil {
		return nil, nil, err
	}
	ref := current.Spec.ControlPlaneRef
	if ref == nil {
		return nil, nil, fmt.Errorf("cluster %s has no controlPlaneRef yet", cluster.Name)
	}
	cp := &unstructured.Unstructured{}
	cp.SetAPIVersion(ref.APIVersion)
	cp.SetKind(ref.Kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: current.Namespace, Name: ref.Name}, cp); err != nil {
		return nil, nil, err
	}
	return current, cp, nil
}

func controlPlaneInitializedCondition(cluster *clusterv1.Cluster) bool {
	return conditions.IsTrue(cluster, clusterv1.ControlPlaneInitializedCondition)
}

func hasNodeRef(m *clusterv1.Machine) bool { return m.Status.NodeRef != nil }
