package capie2e

// What differs between the suite's two generations: here Cluster API v1.14
// and the RKE2 providers v0.25 (contract v1beta2); ../generation_test.go has
// v1.10 and v0.21's.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"
	"sigs.k8s.io/cluster-api/util/conditions"
)

// The RKE2 templates' apiVersions of a class, v1beta1 (the project's
// templates/ file) to be rewritten to v1beta2: the topology controller of
// v1.14 writes the v1beta2 contract's fields (spec.machineTemplate.spec) into
// the control plane it creates, which the v1beta1 schema does not declare.
// The release's clusterclass-harvester-rke2-v1beta2.yaml is made the same way
// (hack/release.sh).
var rke2APIVersion = regexp.MustCompile(`(?m)^([ \t]*(?:- )?apiVersion: (?:controlplane|bootstrap)\.cluster\.x-k8s\.io)/v1beta1[ \t]*$`)

// clusterClassSource writes the class with the RKE2 API v1beta2 into dir and
// returns its path.
func clusterClassSource(path, dir string) string {
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	rewritten := rke2APIVersion.ReplaceAll(data, []byte("${1}/v1beta2"))
	Expect(rewritten).NotTo(Equal(data), "%s: no RKE2 apiVersion v1beta1 to rewrite", path)
	out := filepath.Join(dir, "clusterclass-harvester-rke2-v1beta2.yaml")
	Expect(os.WriteFile(out, rewritten, 0o600)).To(Succeed())
	return out
}

// repositoryVersion names the local repository's release: config/caphv.yaml's,
// the current series (0.11, contract v1beta2).
func repositoryVersion(name string) string { return name }

// The RKE2ControlPlane's fields the waiters read (waiters_test.go): v1beta2
// has no status.ready; available replicas count instead.
var (
	initializedField   = []string{"status", "initialization", "controlPlaneInitialized"}
	readyReplicaFields = []string{"readyReplicas", "availableReplicas"}
	readyFlag          []string
)

// controlPlaneOf returns the Cluster and its control-plane object, or an
// error to retry on. The v1beta2 reference names a group and kind only; the
// version is the one the provider's CRD declares for the contract, as Cluster
// API resolves it.
func controlPlaneOf(ctx context.Context, c client.Client, cluster *clusterv1.Cluster) (*clusterv1.Cluster, *unstructured.Unstructured, error) {
	current := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cluster), current); err != nil {
		return nil, nil, err
	}
	ref := current.Spec.ControlPlaneRef
	if !ref.IsDefined() {
		return nil, nil, fmt.Errorf("cluster %s has no controlPlaneRef yet", cluster.Name)
	}
	cp, err := external.GetObjectFromContractVersionedRef(ctx, c, ref, current.Namespace)
	if err != nil {
		return nil, nil, err
	}
	return current, cp, nil
}

func controlPlaneInitializedCondition(cluster *clusterv1.Cluster) bool {
	return conditions.IsTrue(cluster, clusterv1.ClusterControlPlaneInitializedCondition)
}

func hasNodeRef(m *clusterv1.Machine) bool { return m.Status.NodeRef.IsDefined() }
