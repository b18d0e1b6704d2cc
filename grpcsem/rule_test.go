package grpcsem_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/grpcsem"
	"github.com/fairsem/semaphore/grpcsem/internal/echo"
)

// unary is a call through a unary server interceptor, called directly, in
// the background; the handler sleeps its work.
type unary struct {
	done chan struct{}
	err  error
	took time.Duration
}

func call(ctx context.Context, ic grpc.UnaryServerInterceptor, method string, work time.Duration) *unary {
	u := &unary{done: make(chan struct{})}
	go func() {
		start := time.Now()
		_, u.err = ic(ctx, nil, &grpc.UnaryServerInfo{FullMethod: method}, func(ctx context.Context, _ any) (any, error) {
			time.Sleep(work)
			return nil, nil
		})
		u.took = time.Since(start)
		close(u.done)
	}()
	synctest.Wait()
	return u
}

func (u *unary) answered() bool {
	select {
	case <-u.done:
		return true
	default:
		return false
	}
}

func TestSemaphore_RefusesAtOnceACallWhoseExpectedWaitExceedsWithTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ic := grpcsem.UnaryServerInterceptor(grpcsem.Semaphore(semaphore.New(1), nil), grpcsem.WithTimeout(150*time.Millisecond))
		<-call(t.Context(), ic, "/s/M", 100*time.Millisecond).done // the usual round trip: 100ms
		running := call(t.Context(), ic, "/s/M", 100*time.Millisecond)
		waits := call(t.Context(), ic, "/s/M", 100*time.Millisecond) // 100ms expected
		refused := call(t.Context(), ic, "/s/M", 100*time.Millisecond)
		<-refused.done
		assert.Zero(t, refused.took, "200ms expected, past the 150ms budget: told at once")
		assert.Equal(t, codes.ResourceExhausted, status.Code(refused.err))
		assert.Equal(t, "grpcsem: overloaded: shed", status.Convert(refused.err).Message())
		assert.False(t, waits.answered())
		<-running.done
		<-waits.done
		require.NoError(t, waits.err)
	})
}

func TestSemaphore_TheCallsDeadlineMustCoverTheWaitAndTheRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ic := grpcsem.UnaryServerInterceptor(grpcsem.Semaphore(semaphore.New(1), nil))
		<-call(t.Context(), ic, "/s/M", 100*time.Millisecond).done
		running := call(t.Context(), ic, "/s/M", 100*time.Millisecond)
		ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
		defer cancel()
		refused := call(ctx, ic, "/s/M", 100*time.Millisecond) // 100ms + 100ms past 150ms
		<-refused.done
		assert.Zero(t, refused.took)
		assert.Equal(t, codes.ResourceExhausted, status.Code(refused.err), "refused for load, not the client's own deadline")
		<-running.done
	})
}

func TestWithPriority_ShedsSheddableCallsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		byMethod := grpcsem.WithPriority(func(_ context.Context, c grpcsem.Call) adaptive.Priority {
			if strings.HasSuffix(c.FullMethod, "Batch") {
				return adaptive.Sheddable
			}
			return adaptive.Critical
		})
		ic := grpcsem.UnaryServerInterceptor(grpcsem.Semaphore(semaphore.New(1), nil), byMethod)
		<-call(t.Context(), ic, "/s/Pay", 20*time.Millisecond).done
		running := call(t.Context(), ic, "/s/Pay", 20*time.Millisecond)
		batch := call(t.Context(), ic, "/s/Batch", 20*time.Millisecond) // 20ms expected: past a sheddable call's 5ms
		<-batch.done
		assert.Zero(t, batch.took)
		assert.Equal(t, codes.ResourceExhausted, status.Code(batch.err))
		pay := call(t.Context(), ic, "/s/Pay", 20*time.Millisecond)
		assert.False(t, pay.answered(), "a critical call waits")
		<-running.done
		<-pay.done
		require.NoError(t, pay.err)

		bad := grpcsem.UnaryServerInterceptor(grpcsem.Semaphore(semaphore.New(1), nil),
			grpcsem.WithPriority(func(context.Context, grpcsem.Call) adaptive.Priority { return 5 }))
		assert.PanicsWithValue(t, "grpcsem: priority Level(5) for /s/X: not a Priority", func() {
			_, _ = bad(t.Context(), nil, &grpc.UnaryServerInfo{FullMethod: "/s/X"}, func(context.Context, any) (any, error) { return nil, nil })
		})
		assert.PanicsWithValue(t, "grpcsem: WithPriority(nil)", func() { grpcsem.WithPriority(nil) })
	})
}

func TestAdaptive_TheLimiterGetsTheWaitBudgetAndThePriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(semaphore.New(1), adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 1, MinLimit: 1, MaxLimit: 1}),
			adaptive.WithWindow(1, 0, 0))
		ic := grpcsem.UnaryServerInterceptor(grpcsem.Adaptive(l), grpcsem.WithTimeout(150*time.Millisecond),
			grpcsem.WithPriority(func(_ context.Context, c grpcsem.Call) adaptive.Priority {
				if c.FullMethod == "/s/Batch" {
					return adaptive.Sheddable
				}
				return adaptive.Default
			}))
		<-call(t.Context(), ic, "/s/M", 100*time.Millisecond).done
		running := call(t.Context(), ic, "/s/M", 100*time.Millisecond)
		waits := call(t.Context(), ic, "/s/M", 100*time.Millisecond)
		refused := call(t.Context(), ic, "/s/M", 100*time.Millisecond)
		<-refused.done
		assert.Zero(t, refused.took)
		assert.Equal(t, codes.ResourceExhausted, status.Code(refused.err))
		batch := call(t.Context(), ic, "/s/Batch", 100*time.Millisecond)
		<-batch.done
		st := l.Stats()
		assert.Equal(t, uint64(1), st.Levels[adaptive.Default].ShedAtOnce)
		assert.Equal(t, uint64(1), st.Levels[adaptive.Sheddable].ShedAtOnce)
		<-running.done
		<-waits.done
	})
}

func TestWithoutDeadlineShedding_ACallWaitsOutItsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ic := grpcsem.UnaryServerInterceptor(grpcsem.Semaphore(semaphore.New(1), nil),
			grpcsem.WithTimeout(150*time.Millisecond), grpcsem.WithoutDeadlineShedding())
		<-call(t.Context(), ic, "/s/M", 100*time.Millisecond).done
		running := call(t.Context(), ic, "/s/M", 100*time.Millisecond)
		next := call(t.Context(), ic, "/s/M", 100*time.Millisecond)
		late := call(t.Context(), ic, "/s/M", 100*time.Millisecond) // the rule would refuse it at once
		<-late.done
		assert.Equal(t, 150*time.Millisecond, late.took)
		assert.Equal(t, codes.ResourceExhausted, status.Code(late.err))
		assert.Contains(t, status.Convert(late.err).Message(), "not admitted within 150ms")
		<-running.done
		<-next.done
	})
}

// Over a real connection, the priority comes from the metadata, and a
// sheddable call refused at once carries the pushback trailer.
func TestServer_APriorityFromTheMetadataShedsWithPushback(t *testing.T) {
	sem := semaphore.New(1)
	fromMetadata := grpcsem.WithPriority(func(ctx context.Context, _ grpcsem.Call) adaptive.Priority {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get("x-priority"); len(v) == 1 && v[0] == "sheddable" {
			return adaptive.Sheddable
		}
		return adaptive.Default
	})
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	cc := serve(t, "bufconn", &service{unary: func(ctx context.Context, in *echo.Message) (*echo.Message, error) {
		started <- struct{}{}
		<-release
		return in, nil
	}}, serverLimit(grpcsem.Semaphore(sem, nil), fromMetadata))
	go func() { _, _ = echo.Call(t.Context(), cc, "holds the unit") }()
	<-started
	// The shed level waits at most 5ms, and nothing is measured yet: the
	// call is cut at its cap.
	var trailer metadata.MD
	ctx := metadata.AppendToOutgoingContext(t.Context(), "x-priority", "sheddable")
	_, err := echo.Call(ctx, cc, "x", grpc.Trailer(&trailer))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.Len(t, trailer.Get(grpcsem.PushbackKey), 1)
	close(release)
}

func TestAdmission_TheControllerGetsTheWaitBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctrl := admission.New(admission.Resources{Count: 1}, admission.WithName("api"))
		ic := grpcsem.UnaryServerInterceptor(grpcsem.Admission(ctrl, nil), grpcsem.WithTimeout(150*time.Millisecond))
		<-call(t.Context(), ic, "/s/M", 100*time.Millisecond).done
		running := call(t.Context(), ic, "/s/M", 100*time.Millisecond)
		waits := call(t.Context(), ic, "/s/M", 100*time.Millisecond)
		refused := call(t.Context(), ic, "/s/M", 100*time.Millisecond)
		<-refused.done
		assert.Zero(t, refused.took)
		assert.Equal(t, codes.ResourceExhausted, status.Code(refused.err))
		assert.Equal(t, uint64(1), ctrl.Stats().Shed)
		<-running.done
		<-waits.done
		require.NoError(t, waits.err)
	})
}
