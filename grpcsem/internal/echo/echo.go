// Package echo is a tiny gRPC service written by hand, without generated code,
// for the tests and examples of grpcsem: a unary method and a bidirectional
// stream, carrying plain strings through a codec of their own.
package echo

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
)

// Method names, as interceptors see them in FullMethod.
const (
	Service    = "grpcsem.echo.Echo"
	UnaryName  = "/" + Service + "/Unary"
	StreamName = "/" + Service + "/Stream"
)

// Message is the one message type: a string.
type Message struct{ Text string }

// Codec encodes a *Message as its text's bytes. Its name makes the content
// type "application/grpc+echo", so it never stands in for a proto codec.
type Codec struct{}

// Marshal returns the text of v, a *Message.
func (Codec) Marshal(v any) ([]byte, error) {
	m, ok := v.(*Message)
	if !ok {
		return nil, fmt.Errorf("echo codec: cannot marshal %T", v)
	}
	return []byte(m.Text), nil
}

// Unmarshal sets the text of v, a *Message.
func (Codec) Unmarshal(data []byte, v any) error {
	m, ok := v.(*Message)
	if !ok {
		return fmt.Errorf("echo codec: cannot unmarshal into %T", v)
	}
	m.Text = string(data)
	return nil
}

// Name is the codec's content subtype.
func (Codec) Name() string { return "echo" }

// Server is what a test implements: the body of each method.
type Server interface {
	Unary(ctx context.Context, in *Message) (*Message, error)
	Stream(stream grpc.ServerStream) error
}

// Desc describes the service for grpc.Server.RegisterService.
var Desc = grpc.ServiceDesc{
	ServiceName: Service,
	HandlerType: (*Server)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Unary",
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := new(Message)
			if err := dec(in); err != nil {
				return nil, err
			}
			if interceptor == nil {
				return srv.(Server).Unary(ctx, in)
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: UnaryName}
			return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
				return srv.(Server).Unary(ctx, req.(*Message))
			})
		},
	}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Stream",
		Handler:       func(srv any, stream grpc.ServerStream) error { return srv.(Server).Stream(stream) },
		ServerStreams: true,
		ClientStreams: true,
	}},
}

// StreamDesc is the stream's description for ClientConn.NewStream.
var StreamDesc = &Desc.Streams[0]

// NewServer returns a gRPC server using the echo codec, with srv registered.
func NewServer(srv Server, opts ...grpc.ServerOption) *grpc.Server {
	s := grpc.NewServer(append([]grpc.ServerOption{grpc.ForceServerCodec(Codec{})}, opts...)...)
	s.RegisterService(&Desc, srv)
	return s
}

// CodecOption is the dial option a client of the service needs.
func CodecOption() grpc.DialOption {
	return grpc.WithDefaultCallOptions(grpc.ForceCodec(Codec{}))
}

// Call makes the unary call with the given text.
func Call(ctx context.Context, cc grpc.ClientConnInterface, text string, opts ...grpc.CallOption) (string, error) {
	out := new(Message)
	if err := cc.Invoke(ctx, UnaryName, &Message{Text: text}, out, opts...); err != nil {
		return "", err
	}
	return out.Text, nil
}

// Open starts the stream.
func Open(ctx context.Context, cc grpc.ClientConnInterface, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return cc.NewStream(ctx, StreamDesc, StreamName, opts...)
}
