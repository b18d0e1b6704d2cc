package echo_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/grpcsem/internal/echo"
)

func TestCodec_RoundTripsTheText(t *testing.T) {
	var c echo.Codec
	data, err := c.Marshal(&echo.Message{Text: "héllo"})
	require.NoError(t, err)
	var m echo.Message
	require.NoError(t, c.Unmarshal(data, &m))
	assert.Equal(t, "héllo", m.Text)
	assert.Equal(t, "echo", c.Name())
}

func TestCodec_RefusesOtherTypes(t *testing.T) {
	var c echo.Codec
	_, err := c.Marshal("text")
	assert.EqualError(t, err, "echo codec: cannot marshal string")
	assert.EqualError(t, c.Unmarshal(nil, new(string)), "echo codec: cannot unmarshal into *string")
}
