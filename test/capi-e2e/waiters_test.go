package capie2e

// Control-plane waiters for the RKE2 control-plane provider. The framework's
// defaults (clusterctl.ApplyCustomClusterTemplateAndWait) look for a
// KubeadmControlPlane; these read the Cluster's control plane, whatever its
// kind, as unstructured, and use the framework's generic Machine helpers.
// Shared by both suites (v1beta2/waiters_test.go is a link to this file);
// what the contract versions name differently is in generation_test.go.
//
//   initialized: the Cluster has its control plane (the topology controller
//     sets the reference for a class-based Cluster), the RKE2ControlPlane
//     reports itself initialized and the Cluster's ControlPlaneInitialized
//     condition is true.
//   machines ready: the RKE2ControlPlane has spec.replicas replicas in each
//     of readyReplicaFields and as many control-plane Machines, each with a
//     nodeRef.
//
// result.ControlPlane stays nil: it is typed *KubeadmControlPlane, and none of
// the specs this suite runs reads it.

import (
	"context"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
)

func rke2ControlPlaneWaiters() clusterctl.ControlPlaneWaiters {
	return clusterctl.ControlPlaneWaiters{
		WaitForControlPlaneInitialized:   waitForRKE2ControlPlaneInitialized,
		WaitForControlPlaneMachinesReady: waitForRKE2ControlPlaneMachinesReady,
	}
}

func waitForRKE2ControlPlaneInitialized(ctx context.Context, input clusterctl.ApplyCustomClusterTemplateAndWaitInput, result *clusterctl.ApplyCustomClusterTemplateAndWaitResult) {
	c := input.ClusterProxy.GetClient()
	Eventually(func(g Gomega) {
		cluster, cp, err := controlPlaneOf(ctx, c, result.Cluster)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cp.GetKind()).To(Equal("RKE2ControlPlane"))
		initialized, _, _ := unstructured.NestedBool(cp.Object, initializedField...)
		g.Expect(initialized).To(BeTrue(), "%s %s: %v", cp.GetKind(), cp.GetName(), initializedField)
		g.Expect(controlPlaneInitializedCondition(cluster)).To(BeTrue(),
			"Cluster %s: condition ControlPlaneInitialized", cluster.Name)
	}, input.WaitForControlPlaneIntervals...).Should(Succeed())
}

func waitForRKE2ControlPlaneMachinesReady(ctx context.Context, input clusterctl.ApplyCustomClusterTemplateAndWaitInput, result *clusterctl.ApplyCustomClusterTemplateAndWaitResult) {
	c := input.ClusterProxy.GetClient()
	Eventually(func(g Gomega) {
		cluster, cp, err := controlPlaneOf(ctx, c, result.Cluster)
		g.Expect(err).NotTo(HaveOccurred())
		replicas, found, _ := unstructured.NestedInt64(cp.Object, "spec", "replicas")
		g.Expect(found).To(BeTrue(), "%s %s: spec.replicas", cp.GetKind(), cp.GetName())
		for _, field := range readyReplicaFields {
			n, _, _ := unstructured.NestedInt64(cp.Object, "status", field)
			g.Expect(n).To(Equal(replicas), "%s %s: status.%s", cp.GetKind(), cp.GetName(), field)
		}
		machines := framework.GetControlPlaneMachinesByCluster(ctx, framework.GetControlPlaneMachinesByClusterInput{
			Lister:      c,
			ClusterName: cluster.Name,
			Namespace:   cluster.Namespace,
		})
		g.Expect(machines).To(HaveLen(int(replicas)))
		for i := range machines {
			g.Expect(hasNodeRef(&machines[i])).To(BeTrue(), "Machine %s: nodeRef", machines[i].Name)
		}
		if len(readyFlag) > 0 {
			ready, _, _ := unstructured.NestedBool(cp.Object, readyFlag...)
			g.Expect(ready).To(BeTrue(), "%s %s: %v", cp.GetKind(), cp.GetName(), readyFlag)
		}
	}, input.WaitForControlPlaneIntervals...).Should(Succeed())
}
