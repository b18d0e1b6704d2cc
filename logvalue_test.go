package semaphore_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

func TestLogValue_IsAGroupOfTheCurrentState(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	s := semaphore.New(4, semaphore.WithName("db"))
	s.Consume(1)
	logger.Info("x", "sem", s)
	var got struct{ Sem map[string]any }
	require.NoError(t, json.Unmarshal(buf.Bytes(), &got))
	assert.Equal(t, map[string]any{
		"name": "db", "capacity": 4.0, "available": 3.0, "waiters": 0.0, "broken": false,
	}, got.Sem)

	buf.Reset()
	s.Break(errors.New("down"))
	logger.Info("x", "sem", s)
	require.NoError(t, json.Unmarshal(buf.Bytes(), &got))
	assert.Equal(t, true, got.Sem["broken"])
	assert.Equal(t, 0.0, got.Sem["available"], "as Available: 0 once broken")
}
