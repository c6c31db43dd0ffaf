// Package webhooks owns webhook delivery (issue 33): which events of the
// global log a webhook is sent (Message), how a request is signed
// (Standard Webhooks: Sign), and the Dispatcher whose one worker per
// active webhook POSTs them, in the log's order, from the webhook's
// stored position, retrying with backoff and disabling a webhook that
// keeps failing.
package webhooks
