// Command dnsconformance runs the specs of Kubernetes' own end-to-end suite
// (k8s.io/kubernetes/test/e2e) that its network package registers, with
// the suite's own set-up, flags and reports: the [sig-network] DNS specs
// among them. It does what test/e2e/e2e_test.go's TestMain and TestE2E do
// for the whole suite, with the network specs alone, so that the binary
// compiles in a fraction of e2e.test's time. Pick the specs with
// --ginkgo.focus, as with e2e.test.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"

	// The suite's set-up (SynchronizedBeforeSuite) and its flags.
	_ "k8s.io/kubernetes/test/e2e"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
	testfixtures "k8s.io/kubernetes/test/fixtures"

	// The specs: [sig-network].
	_ "k8s.io/kubernetes/test/e2e/network"

	// The framework's optional parts, as e2e_test.go links them.
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
)

// failer is the testing.T the Ginkgo runner reports a failed suite to.
type failer struct{ failed bool }

func (f *failer) Fail() { f.failed = true }

func main() {
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown arguments: %q\n", flag.Args())
		os.Exit(2)
	}
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	testfiles.AddFileSource(testfixtures.GetTestFixturesFS())
	framework.AfterReadingAllFlags(&framework.TestContext)

	logs.InitLogs()
	defer logs.FlushLogs()
	klog.EnableContextualLogging(true)
	gomega.RegisterFailHandler(framework.Fail)
	suiteConfig, reporterConfig := framework.CreateGinkgoConfig()
	var t failer
	ginkgo.RunSpecs(&t, "Kubernetes e2e suite: [sig-network]", suiteConfig, reporterConfig)
	if t.failed {
		logs.FlushLogs()
		os.Exit(1)
	}
}
