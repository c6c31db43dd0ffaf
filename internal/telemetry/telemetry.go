// Package telemetry sets up OpenTelemetry tracing for the daemon. It is off
// by default; restores are traced so that a slow or failing resume can be
// followed from the daemon down to the ACP request that caused it.
package telemetry

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// Exporters.
const (
	ExporterNone   = ""
	ExporterStdout = "stdout"
	ExporterOTLP   = "otlp"
)

// Setup installs the global tracer provider for the chosen exporter and
// returns its shutdown function (which flushes pending spans). OTLP uses
// the standard OTEL_EXPORTER_OTLP_* environment variables, or endpoint.
func Setup(ctx context.Context, exporter, endpoint, version string) (func(context.Context) error, error) {
	var exp sdktrace.SpanExporter
	var err error
	switch exporter {
	case ExporterNone, "off", "none":
		return func(context.Context) error { return nil }, nil
	case ExporterStdout:
		exp, err = stdouttrace.New(stdouttrace.WithWriter(os.Stderr))
	case ExporterOTLP:
		var opts []otlptracehttp.Option
		if endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(endpoint))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("unknown trace exporter %q (want stdout, otlp or none)", exporter)
	}
	if err != nil {
		return nil, fmt.Errorf("trace exporter %s: %w", exporter, err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(resource.NewSchemaless(
		semconv.ServiceName("tetherd"), semconv.ServiceVersion(version))))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}
