// Command cert-manager-controller runs cert-manager's own controllers for the tests, from the published
// github.com/cert-manager/cert-manager module (hack/testbin.sh builds it). Upstream's cmd/controller is a
// module of its own that the module proxy does not serve, so this is its Run loop reduced to what the
// tests use: the controllers named by --controllers (every one linked in by default), one kubeconfig, no
// leader election, no metrics, healthz or webhook servers. The controllers are upstream's, unchanged.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// Each registers its controller (controller.Register) or its issuer type when it is imported.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig")
	clusterResources := flag.String("cluster-resource-namespace", "cert-manager",
		"namespace of the Secrets of ClusterIssuers")
	names := flag.String("controllers", "", "comma-separated controllers to run (default: every one linked in)")
	workers := flag.Int("workers", 5, "workers of each controller")
	klog.InitFlags(nil)
	logf.InitLogs()
	defer logf.FlushLogs()
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "controller")
	if err := run(ctx, *kubeconfig, *clusterResources, *names, *workers); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, clusterResources, names string, workers int) error {
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:    kubeconfig,
		IssuerOptions: controller.IssuerOptions{ClusterResourceNamespace: clusterResources},
	})
	if err != nil {
		return err
	}
	base, err := factory.Build()
	if err != nil {
		return err
	}
	known := controller.Known()
	wanted := map[string]bool{}
	for _, name := range strings.Split(names, ",") {
		if name == "" {
			continue
		}
		if known[name] == nil {
			return fmt.Errorf("unknown controller %q", name)
		}
		wanted[name] = true
	}
	group, ctx := errgroup.WithContext(ctx)
	for name, construct := range known {
		if len(wanted) > 0 && !wanted[name] {
			continue
		}
		loop, err := construct(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		logf.Log.Info("starting controller", "controller", name)
		group.Go(func() error { return loop.Run(workers, ctx) })
	}
	// As upstream: the informers start once every controller has registered the ones it needs.
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	return group.Wait()
}
