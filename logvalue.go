package semaphore

import "log/slog"

// LogValue makes a Semaphore log as a group, so that
// slog.Info("slow query", "sem", sem) records its state at that moment:
// name, capacity, available, waiters and broken. It implements slog.LogValuer.
//
// To publish Stats with expvar, one line does it, without this package importing
// expvar (whose import registers an HTTP handler):
//
//	expvar.Publish("db-conns", expvar.Func(func() any { return sem.Stats() }))
func (s *Semaphore) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("name", s.Name()),
		slog.Int64("capacity", s.Capacity()),
		slog.Int64("available", s.Available()),
		slog.Int("waiters", s.Waiters()),
		slog.Bool("broken", s.brokenState() != nil),
	)
}
