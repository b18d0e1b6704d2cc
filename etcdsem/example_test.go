package etcdsem_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/fairsem/semaphore/etcdsem"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Two handles, as two processes would have, share a semaphore of 3 units: the
// second waits in FIFO order until the first releases.
func Example() {
	endpoint, stop := exampleEtcd()
	defer stop()
	ctx := context.Background()
	cli, _ := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, Logger: zap.NewNop()})
	defer cli.Close()

	a, _ := etcdsem.New(ctx, cli, "example/jobs", etcdsem.WithCapacity(3))
	defer a.Close()
	b, _ := etcdsem.New(ctx, cli, "example/jobs")
	defer b.Close()

	u, _ := a.Acquire(ctx, 2)
	fmt.Println("a holds", u.Count(), "units")
	_, ok, _ := b.TryAcquire(ctx, 2)
	fmt.Println("b can take 2 more at once:", ok)

	got := make(chan *etcdsem.Units)
	go func() {
		v, _ := b.Acquire(ctx, 2)
		got <- v
	}()
	_ = u.Release(ctx)
	v := <-got
	fmt.Println("b holds", v.Count(), "units; its token is later:", v.Token() > u.Token())
	_ = v.Release(ctx)
	rep, _ := etcdsem.Audit(ctx, cli, "example/jobs")
	fmt.Println("violations in the history:", len(rep.Violations), rep.Violations)
	// Output:
	// a holds 2 units
	// b can take 2 more at once: false
	// b holds 2 units; its token is later: true
	// violations in the history: 0 []
}

// A Set limits each tenant to its own number of jobs at once across every
// process, on one lease and one watch per process; a tenant's keys leave
// etcd when its last unit comes back.
func ExampleSet() {
	endpoint, stop := exampleEtcd()
	defer stop()
	ctx := context.Background()
	cli, _ := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, Logger: zap.NewNop()})
	defer cli.Close()

	perTenant := func(tenant string) int64 {
		if tenant == "big-customer" {
			return 10
		}
		return 2
	}
	jobs, _ := etcdsem.NewSet(ctx, cli, "example/tenant-jobs", perTenant)
	defer jobs.Close()

	a, _ := jobs.Acquire(ctx, "acme", 2)
	_, ok, _ := jobs.TryAcquire(ctx, "acme", 1)
	fmt.Println("acme can run a third job:", ok)
	b, _, _ := jobs.TryAcquire(ctx, "big-customer", 3)
	fmt.Println("big-customer runs", b.Count(), "jobs")
	_ = a.Release(ctx)
	_ = b.Release(ctx)
	left, _ := cli.Get(ctx, etcdsem.KeyPrefix("example/tenant-jobs"), clientv3.WithPrefix(), clientv3.WithCountOnly())
	fmt.Println("keys left in etcd:", left.Count)
	// Output:
	// acme can run a third job: false
	// big-customer runs 3 jobs
	// keys left in etcd: 0
}

// exampleEtcd starts a throwaway etcd on 127.0.0.1.
func exampleEtcd() (endpoint string, stop func()) {
	dir, _ := os.MkdirTemp("", "etcdsem-example-")
	cfg := embed.NewConfig()
	cfg.Dir = dir
	urls := make([]url.URL, 2)
	for i := range urls {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		urls[i] = url.URL{Scheme: "http", Host: l.Addr().String()}
		l.Close()
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = urls[:1], urls[:1]
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = urls[1:], urls[1:]
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		panic(err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		panic("etcd not ready")
	}
	return urls[0].String(), func() { e.Close(); os.RemoveAll(dir) }
}
