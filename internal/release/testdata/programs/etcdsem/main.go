// Command etcdsem uses the etcdsem module as a user's program does, against a
// real etcd: it starts one, embedded from etcd's own module, on 127.0.0.1, and
// takes and gives back units of a semaphore held in it, while a second handle
// finds them taken.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/etcdsem"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

func main() {
	dir, err := os.MkdirTemp("", "published-etcdsem-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := embed.NewConfig()
	cfg.Dir = dir
	client, peer := localURL(), localURL()
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		log.Fatal("embedded etcd not ready after a minute")
	}

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{client.String()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	a, err := etcdsem.New(ctx, cli, "published", etcdsem.WithCapacity(2))
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := etcdsem.New(ctx, cli, "published", etcdsem.WithCapacity(2))
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	u, err := a.Acquire(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("handle a holds 2 units, fencing token", u.Token())
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = b.Acquire(short, 1)
	cancelShort()
	if !errors.Is(err, semaphore.ErrTimedOut) {
		log.Fatalf("handle b, with every unit held by a: got %v, want an error matching semaphore.ErrTimedOut", err)
	}
	fmt.Println("handle b timed out as expected:", err)
	if err := u.Release(ctx); err != nil {
		log.Fatal(err)
	}
	v, err := b.Acquire(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("handle b holds 1 unit after a released, fencing token", v.Token())
	if err := v.Release(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("etcdsem: ok")
}

// localURL returns an http URL on 127.0.0.1 at a port free now.
func localURL() url.URL {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}
