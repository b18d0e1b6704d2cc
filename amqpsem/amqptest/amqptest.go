// Package amqptest starts a throwaway RabbitMQ node for tests, examples and
// benchmarks: its own node name, ports, Erlang port mapper, data and log
// directories under a directory the caller gives, listening on 127.0.0.1
// only, and killed with the process that started it.
//
//	b, err := amqptest.Start(amqptest.Options{Dir: t.TempDir(), Plugins: []string{"rabbitmq_event_exchange"}})
//	if err != nil { ... }
//	defer b.Stop()
//	s, err := amqpsem.New(ctx, b.URL, "jobs", amqpsem.WithSlots(3))
//
// It runs the rabbitmq-server of a local installation (Debian and Ubuntu:
// apt-get install rabbitmq-server; the package's system service is not used
// and may stay stopped). Server finds it.
package amqptest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotInstalled: no rabbitmq-server was found (see Server).
var ErrNotInstalled = errors.New("rabbitmq-server not installed (Debian, Ubuntu: apt-get install -y rabbitmq-server; or set AMQPTEST_RABBITMQ_BIN to the directory holding rabbitmq-server and rabbitmqctl)")

// Server returns the rabbitmq-server script to run: in $AMQPTEST_RABBITMQ_BIN
// if set, else Debian's /usr/lib/rabbitmq/bin (not /usr/sbin/rabbitmq-server,
// which runs the node as the rabbitmq user with that user's home), else
// rabbitmq-server on PATH. It returns ErrNotInstalled if there is none.
func Server() (string, error) {
	var candidates []string
	if dir := os.Getenv("AMQPTEST_RABBITMQ_BIN"); dir != "" {
		candidates = append(candidates, filepath.Join(dir, "rabbitmq-server"))
	}
	candidates = append(candidates, "/usr/lib/rabbitmq/bin/rabbitmq-server")
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return c, nil
		}
	}
	if p, err := exec.LookPath("rabbitmq-server"); err == nil {
		return p, nil
	}
	return "", ErrNotInstalled
}

// Options configure a node.
type Options struct {
	// Dir holds the node's data, logs, configuration and Erlang cookie
	// (required; a test's t.TempDir()). A node started again in the same Dir
	// keeps its durable queues.
	Dir string
	// Plugins are enabled at start, e.g. "rabbitmq_event_exchange".
	Plugins []string
	// Config is appended to the node's rabbitmq.conf (one setting a line).
	Config string
	// Users are created at start, besides guest (password guest, every
	// permission on the virtual host "/"), without rabbitmqctl.
	Users []User
	// StartTimeout bounds the wait for the node to accept AMQP connections
	// (default 5 minutes: a node boots in 10 to 30 seconds on a loaded
	// 2-core machine, and took over 2 minutes on one oversubscribed tenfold).
	StartTimeout time.Duration
}

// A User of the node, with its permissions on the virtual host "/" (regular
// expressions of the resources it may configure, write and read; "" for none,
// as rabbitmqctl set_permissions takes them).
type User struct {
	Name, Password         string
	Configure, Write, Read string
}

// definitions returns the node's definitions file: the virtual host "/", guest
// and users, with their permissions. A node that loads definitions at start
// creates no default user, so guest is among them.
func definitions(users []User) ([]byte, error) {
	type user struct {
		Name      string `json:"name"`
		Hash      string `json:"password_hash"`
		Algorithm string `json:"hashing_algorithm"`
		Tags      string `json:"tags"`
	}
	type permission struct {
		User      string `json:"user"`
		Vhost     string `json:"vhost"`
		Configure string `json:"configure"`
		Write     string `json:"write"`
		Read      string `json:"read"`
	}
	var d struct {
		Users       []user              `json:"users"`
		Vhosts      []map[string]string `json:"vhosts"`
		Permissions []permission        `json:"permissions"`
	}
	d.Vhosts = []map[string]string{{"name": "/"}}
	all := append([]User{{Name: "guest", Password: "guest", Configure: ".*", Write: ".*", Read: ".*"}}, users...)
	for i, u := range all {
		tags := ""
		if i == 0 {
			tags = "administrator"
		}
		h, err := passwordHash(u.Password)
		if err != nil {
			return nil, err
		}
		d.Users = append(d.Users, user{u.Name, h, "rabbit_password_hashing_sha256", tags})
		d.Permissions = append(d.Permissions, permission{u.Name, "/", u.Configure, u.Write, u.Read})
	}
	return json.Marshal(d)
}

// passwordHash is RabbitMQ's salted SHA-256 of a password: base64 of a random
// 4-byte salt followed by SHA-256(salt, password).
func passwordHash(password string) (string, error) {
	salt := make([]byte, 4)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	sum := sha256.Sum256(append(slices.Clone(salt), password...))
	return base64.StdEncoding.EncodeToString(append(salt, sum[:]...)), nil
}

// A Broker is one node. Its ports stay the same across Stop and Start, so
// clients reconnect to the same URL.
type Broker struct {
	URL      string // amqp://guest:guest@127.0.0.1:PORT/
	Port     int    // the AMQP port
	NodeName string

	opts     Options
	server   string
	env      []string
	epmdPort int

	mu   sync.Mutex
	node *exec.Cmd  // nil while stopped
	exit chan error // the node's exit
	epmd *exec.Cmd  // the port mapper, started once
	log  *os.File
}

// Start starts a node and waits until it accepts connections.
func Start(opts Options) (*Broker, error) {
	b, err := New(opts)
	if err != nil {
		return nil, err
	}
	if err := b.Start(); err != nil {
		b.Stop()
		return nil, err
	}
	return b, nil
}

// New prepares a node in opts.Dir, with ports free now, without starting it.
func New(opts Options) (*Broker, error) {
	if opts.Dir == "" {
		return nil, errors.New("amqptest: Options.Dir is required")
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 5 * time.Minute
	}
	server, err := Server()
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	b := &Broker{
		Port:     ports[0],
		URL:      fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", ports[0]),
		NodeName: fmt.Sprintf("amqptest-%d-%d@localhost", os.Getpid(), ports[0]),
		opts:     opts,
		server:   server,
		epmdPort: ports[2],
	}
	for _, d := range []string{"mnesia", "log"} {
		if err := os.MkdirAll(filepath.Join(opts.Dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	defs, err := definitions(opts.Users)
	if err != nil {
		return nil, err
	}
	defsFile := filepath.Join(opts.Dir, "definitions.json")
	if err := os.WriteFile(defsFile, defs, 0o600); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf("listeners.tcp.default = 127.0.0.1:%d\nlog.console = false\nlog.file.level = warning\nload_definitions = %s\n%s\n", b.Port, defsFile, opts.Config)
	if err := os.WriteFile(filepath.Join(opts.Dir, "rabbitmq.conf"), []byte(conf), 0o644); err != nil {
		return nil, err
	}
	plugins := "[" + strings.Join(opts.Plugins, ",") + "].\n"
	if err := os.WriteFile(filepath.Join(opts.Dir, "enabled_plugins"), []byte(plugins), 0o644); err != nil {
		return nil, err
	}
	b.env = append(os.Environ(),
		"HOME="+opts.Dir, // the Erlang cookie lives there, for the node and rabbitmqctl
		"RABBITMQ_NODENAME="+b.NodeName,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(b.Port),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(ports[1]),
		"ERL_EPMD_PORT="+strconv.Itoa(b.epmdPort),
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"RABBITMQ_MNESIA_BASE="+filepath.Join(opts.Dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(opts.Dir, "log"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(opts.Dir, "rabbitmq"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(opts.Dir, "enabled_plugins"),
		"RABBITMQ_PID_FILE="+filepath.Join(opts.Dir, "rabbitmq.pid"),
		// The script then runs the Erlang VM in its own process (exec), so
		// that the process started here is the node and dies with its parent.
		"RABBITMQ_ALLOW_INPUT=1",
		"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-noinput -kernel inet_dist_use_interface {127,0,0,1}",
		"RABBITMQ_CTL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}",
	)
	return b, nil
}

// Start starts the node (again, after Stop or Kill) and waits until it
// accepts AMQP connections.
func (b *Broker) Start() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.node != nil {
		return errors.New("amqptest: the node is running")
	}
	if b.log == nil {
		f, err := os.OpenFile(filepath.Join(b.opts.Dir, "node.out"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		b.log = f
	}
	if b.epmd == nil {
		// The port mapper the node registers with, a child of this process
		// (a node would otherwise start one that outlives it).
		epmd := exec.Command("epmd", "-port", strconv.Itoa(b.epmdPort), "-address", "127.0.0.1")
		epmd.Env = b.env
		epmd.Stdout, epmd.Stderr = b.log, b.log
		epmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := epmd.Start(); err != nil {
			return fmt.Errorf("amqptest: start epmd: %w", err)
		}
		b.epmd = epmd
		go func() { _ = epmd.Wait() }()
	}
	cmd := exec.Command(b.server)
	cmd.Env = b.env
	cmd.Dir = b.opts.Dir
	cmd.Stdout, cmd.Stderr = b.log, b.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("amqptest: start %s: %w", b.server, err)
	}
	exit := make(chan error, 1)
	go func() { exit <- cmd.Wait() }()
	b.node, b.exit = cmd, exit
	deadline := time.Now().Add(b.opts.StartTimeout)
	for {
		if err := handshake(b.Port); err == nil {
			return nil
		}
		select {
		case err := <-exit:
			b.node = nil
			return fmt.Errorf("amqptest: the node exited while starting (%v); its output is in %s", err, filepath.Join(b.opts.Dir, "node.out"))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("amqptest: the node does not accept connections after %v; its output is in %s", b.opts.StartTimeout, filepath.Join(b.opts.Dir, "node.out"))
		}
	}
}

// handshake reports whether an AMQP server answers on port: it sends the
// protocol header and waits for the server's first frame (connection.start).
func handshake(port int) error {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("AMQP\x00\x00\x09\x01")); err != nil {
		return err
	}
	buf := make([]byte, 1)
	if _, err := c.Read(buf); err != nil {
		return err
	}
	if buf[0] != 1 { // a method frame
		return fmt.Errorf("unexpected first byte %d", buf[0])
	}
	return nil
}

// Stop stops the node gracefully (SIGTERM: it closes its connections, which
// clients see as closed by the broker), killing it after a minute, and stops
// its port mapper. Stop of a stopped node only stops the port mapper.
func (b *Broker) Stop() {
	b.stop(syscall.SIGTERM)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.epmd != nil {
		_ = b.epmd.Process.Kill()
		b.epmd = nil
	}
	if b.log != nil {
		b.log.Close()
		b.log = nil
	}
}

// Halt stops the node gracefully and keeps the port mapper, for Start again.
func (b *Broker) Halt() { b.stop(syscall.SIGTERM) }

// Kill kills the node (SIGKILL): its clients' connections are reset.
func (b *Broker) Kill() { b.stop(syscall.SIGKILL) }

// Pause stops the node's process (SIGSTOP): its clients see a silent broker.
func (b *Broker) Pause() error { return b.signal(syscall.SIGSTOP) }

// Resume continues a paused node (SIGCONT).
func (b *Broker) Resume() error { return b.signal(syscall.SIGCONT) }

func (b *Broker) signal(sig syscall.Signal) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.node == nil {
		return errors.New("amqptest: the node is not running")
	}
	return b.node.Process.Signal(sig)
}

func (b *Broker) stop(sig syscall.Signal) {
	b.mu.Lock()
	node, exit := b.node, b.exit
	b.node = nil
	b.mu.Unlock()
	if node == nil {
		return
	}
	_ = node.Process.Signal(syscall.SIGCONT)
	_ = node.Process.Signal(sig)
	select {
	case <-exit:
	case <-time.After(time.Minute):
		_ = node.Process.Kill()
		<-exit
	}
}

// Ctl runs rabbitmqctl against the node with args and returns its output.
func (b *Broker) Ctl(ctx context.Context, args ...string) (string, error) {
	ctl := filepath.Join(filepath.Dir(b.server), "rabbitmqctl")
	if _, err := os.Stat(ctl); err != nil {
		ctl = "rabbitmqctl"
	}
	cmd := exec.CommandContext(ctx, ctl, append([]string{"-n", b.NodeName}, args...)...)
	cmd.Env = b.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("rabbitmqctl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// freePorts returns n TCP ports free on 127.0.0.1 now.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
