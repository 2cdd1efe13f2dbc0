package capie2e

// Control-plane waiters for the RKE2 control-plane provider. The framework's
// defaults (clusterctl.ApplyCustomClusterTemplateAndWait) look for a
// KubeadmControlPlane; these read the Cluster's controlPlaneRef, whatever its
// kind, as unstructured, and use the framework's generic Machine helpers.
//
//   initialized: the Cluster has its controlPlaneRef (the topology controller
//     sets it for a class-based Cluster), the RKE2ControlPlane reports
//     status.initialized and the Cluster's ControlPlaneInitialized condition
//     is true.
//   machines ready: the RKE2ControlPlane has spec.replicas ready replicas
//     (status.readyReplicas, status.ready) and as many control-plane Machines,
//     each with a nodeRef.
//
// result.ControlPlane stays nil: it is typed *KubeadmControlPlane, and none of
// the specs this suite runs reads it.

import (
	"context"
	"fmt"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/v1beta1"
	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
	"sigs.k8s.io/cluster-api/util/conditions"
)

func rke2ControlPlaneWaiters() clusterctl.ControlPlaneWaiters {
	return clusterctl.ControlPlaneWaiters{
		WaitForControlPlaneInitialized:   waitForRKE2ControlPlaneInitialized,
		WaitForControlPlaneMachinesReady: waitForRKE2ControlPlaneMachinesReady,
	}
}

// controlPlaneOf returns the Cluster's control-plane object, or an error to
// retry on.
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

func waitForRKE2ControlPlaneInitialized(ctx context.Context, input clusterctl.ApplyCustomClusterTemplateAndWaitInput, result *clusterctl.ApplyCustomClusterTemplateAndWaitResult) {
	c := input.ClusterProxy.GetClient()
	Eventually(func(g Gomega) {
		cluster, cp, err := controlPlaneOf(ctx, c, result.Cluster)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cp.GetKind()).To(Equal("RKE2ControlPlane"))
		initialized, _, _ := unstructured.NestedBool(cp.Object, "status", "initialized")
		g.Expect(initialized).To(BeTrue(), "%s %s: status.initialized", cp.GetKind(), cp.GetName())
		g.Expect(conditions.IsTrue(cluster, clusterv1.ControlPlaneInitializedCondition)).To(BeTrue(),
			"Cluster %s: condition %s", cluster.Name, clusterv1.ControlPlaneInitializedCondition)
	}, input.WaitForControlPlaneIntervals...).Should(Succeed())
}

func waitForRKE2ControlPlaneMachinesReady(ctx context.Context, input clusterctl.ApplyCustomClusterTemplateAndWaitInput, result *clusterctl.ApplyCustomClusterTemplateAndWaitResult) {
	c := input.ClusterProxy.GetClient()
	Eventually(func(g Gomega) {
		cluster, cp, err := controlPlaneOf(ctx, c, result.Cluster)
		g.Expect(err).NotTo(HaveOccurred())
		replicas, found, _ := unstructured.NestedInt64(cp.Object, "spec", "replicas")
		g.Expect(found).To(BeTrue(), "%s %s: spec.replicas", cp.GetKind(), cp.GetName())
		ready, _, _ := unstructured.NestedInt64(cp.Object, "status", "readyReplicas")
		g.Expect(ready).To(Equal(replicas), "%s %s: status.readyReplicas", cp.GetKind(), cp.GetName())
		isReady, _, _ := unstructured.NestedBool(cp.Object, "status", "ready")
		g.Expect(isReady).To(BeTrue(), "%s %s: status.ready", cp.GetKind(), cp.GetName())
		machines := framework.GetControlPlaneMachinesByCluster(ctx, framework.GetControlPlaneMachinesByClusterInput{
			Lister:      c,
			ClusterName: cluster.Name,
			Namespace:   cluster.Namespace,
		})
		g.Expect(machines).To(HaveLen(int(replicas)))
		for _, m := range machines {
			g.Expect(m.Status.NodeRef).NotTo(BeNil(), "Machine %s: nodeRef", m.Name)
		}
	}, input.WaitForControlPlaneIntervals...).Should(Succeed())
}
