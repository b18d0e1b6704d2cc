package readmecheck

// preludes holds, per module directory, the package-level declarations of the
// free identifiers snippets rely on: the values the README's prose assumes the
// reader already has. Every module gets the "." prelude (the core module's
// packages are importable from the nested ones); a nested module adds its own.
// Only package-level declarations go here, so none of them can make a variable
// declared inside a snippet count as used.
var preludes = map[string]string{
	rootModule: `import (
	"context"
	"log/slog"
	"net"
	"net/http"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
)

// Values a request handler has.
var (
	ctx         context.Context
	shutdownCtx context.Context // ends when the shutdown grace period does
	logger      *slog.Logger
	user        string // the tenant of the request

	validOperator func(user, password string) bool // the reader's own check of an operator
)

// Resources built elsewhere in the reader's program.
var (
	sem  *semaphore.Semaphore
	ctrl *admission.Controller
	ln   net.Listener
	h    http.Handler
)

// The reader's work.
var (
	query          func(ctx context.Context) error
	fetch          func(ctx context.Context) ([]row, error)
	process        func(rows []row, p *admission.Permit) error
	scan           func(ctx context.Context, p *admission.Permit) error
	fn             func(ctx context.Context, p *admission.Permit) error
	estimatedBytes int64
	bytes          int64
	estimate       func(r *http.Request) int64
	files          []file
	upload         func(ctx context.Context, f file) error
	plan           map[string]tenantPlan
)

type row struct{ key, value string }

type file struct {
	Name string
	Size int64 // bytes, the units the upload holds
}

type tenantPlan struct {
	uploads  int64 // concurrent uploads allowed
	weight   int64 // the tenant's share of a total, relative to others'
	reserved int64 // uploads the tenant is guaranteed while it asks
}
`,
	"etcdsem": `import clientv3 "go.etcd.io/etcd/client/v3"

var (
	client      *clientv3.Client
	stopWriting func()
	data        []byte
	// store rejects writes carrying a fencing token older than one it has seen.
	store interface {
		Write(data []byte, token int64) error
	}
)
`,
	"amqpsem": `var stopWriting func()
`,
	"metrics/otel": `import "go.opentelemetry.io/otel/metric"

var meter metric.Meter
`,
	"metrics/prom": ``,
	"grpcsem": `import (
	"context"

	"github.com/fairsem/semaphore/grpcsem"
)

// callMemory estimates the memory a gRPC call will use.
var callMemory func(ctx context.Context, call grpcsem.Call) int64
`,
}
