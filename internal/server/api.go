package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/queuestatus"
	"github.com/amnesia-dev/amnesia/internal/service"
)

// The HTTP shapes of the API. Request and response bodies reuse the
// service's types; these wrap them with paths, queries and headers.

type recordInput struct {
	Body struct {
		Scope   string                  `json:"scope,omitempty" maxLength:"128" doc:"The tenant; default: the token's only scope, or the installation's scope."`
		Records []service.LineageRecord `json:"records" minItems:"1" maxItems:"1000" doc:"1 to 1000 records; idempotent by (store, key) and content."`
	}
}

type recordOutput struct{ Body service.RecordResult }

type traceInput struct {
	Body struct {
		Scope   string `json:"scope,omitempty" maxLength:"128"`
		Subject string `json:"subject" minLength:"1" maxLength:"512" doc:"The raw subject id; keyed at once, never stored or logged."`
	}
}

type traceOutput struct{ Body *service.TraceSummary }

type createRequestInput struct {
	Body struct {
		Scope       string     `json:"scope,omitempty" maxLength:"128"`
		Subject     string     `json:"subject" minLength:"1" maxLength:"512" doc:"The raw subject id; the request keeps only its keyed digest."`
		Reason      string     `json:"reason" minLength:"1" maxLength:"200" doc:"Ticket or legal basis; goes into the certificate; no personal data."`
		ExternalRef string     `json:"external_ref,omitempty" maxLength:"200"`
		Due         *time.Time `json:"due,omitempty" doc:"Due date (RFC 3339); default: received + serve.due."`
		CallbackURL string     `json:"callback_url,omitempty" maxLength:"2048" doc:"POSTed to, signed, when the request ends."`
	}
}

type requestOutput struct{ Body *service.Request }

type idInput struct {
	ID string `path:"id" maxLength:"80" doc:"The request id (req_...)."`
}

type previewOutput struct{ Body *service.Preview }

type confirmInput struct {
	ID   string `path:"id" maxLength:"80"`
	Body struct {
		Confirmation string `json:"confirmation" minLength:"1" maxLength:"100" doc:"The confirmation of the latest preview (cnf_...)."`
	}
}

type listInput struct {
	State   string `query:"state" enum:"received,previewed,queued,running,done,failed,paused," doc:"Only requests in this state."`
	Overdue string `query:"overdue" enum:"true,false," doc:"Only overdue (true) or not overdue (false) requests."`
}

type statusInput struct {
	Limit int  `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"List at most this many open erasures (and, with all, finished ones)."`
	All   bool `query:"all" doc:"Also list the finished erasures (done and failed), latest first."`
}

type queueStatusOutput struct{ Body *queuestatus.Report }

type listOutput struct {
	Body struct {
		Requests []service.Request `json:"requests"`
	}
}

type webhookInput struct {
	Timestamp string `header:"X-Webhook-Timestamp" doc:"Unix seconds."`
	Signature string `header:"X-Webhook-Signature" doc:"v1=base64(HMAC-SHA256(secret, \"<timestamp>:<body>\"))."`
	RawBody   []byte `contentType:"application/json"`
}

type webhookOutput struct {
	Body struct {
		ID string `json:"id"`
	}
}

type certInput struct {
	ID string `path:"id" maxLength:"80" doc:"The certificate (erasure) id."`
}

type bytesOutput struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

type verifyInput struct {
	RawBody []byte `contentType:"application/vnd.amnesia.certificate.v1+json"`
}

type verifyOutput struct{ Body *service.Verification }

type consistencyInput struct {
	Old uint64 `query:"old" minimum:"1" required:"true"`
	New uint64 `query:"new" minimum:"1" required:"true"`
}

type proofOutput struct {
	Body struct {
		Proof    [][]byte `json:"proof" doc:"Base64 SHA-256 hashes."`
		LeafHash []byte   `json:"leaf_hash,omitempty" doc:"Base64 hash of the leaf (inclusion proofs)."`
	}
}

type inclusionInput struct {
	Index uint64 `query:"index" required:"true"`
	Size  uint64 `query:"size" minimum:"1" required:"true"`
}

type keysOutput struct {
	Body struct {
		Keys []service.PublicKey `json:"keys"`
	}
}

type statusOutput struct {
	Body struct {
		Status string `json:"status"`
	}
}

var bearer = []map[string][]string{{"bearer": {}}}

// register adds every operation to api. svc may be nil when only the
// OpenAPI document is wanted.
func register(api huma.API, svc *service.Service, maxBody int64) {
	body := maxBody + 1 // huma refuses a body that reaches its limit
	op := func(id, method, path, summary string, status int, errs ...int) huma.Operation {
		return huma.Operation{OperationID: id, Method: method, Path: path, Summary: summary, DefaultStatus: status,
			Security: bearer, MaxBodyBytes: body, Errors: append([]int{401, 403, 429}, errs...), Tags: []string{"v1"}}
	}
	huma.Register(api, op("record-lineage", http.MethodPost, "/v1/lineage", "Record lineage (capture)", 200, 409, 413, 422, 503), func(ctx context.Context, in *recordInput) (*recordOutput, error) {
		res, err := svc.Record(ctx, principal(ctx), in.Body.Scope, in.Body.Records)
		if err != nil {
			return nil, problem(ctx, err)
		}
		return &recordOutput{Body: res}, nil
	})
	huma.Register(api, op("trace", http.MethodPost, "/v1/trace", "Count what is recorded for a subject (operator)", 200, 404, 409, 422), func(ctx context.Context, in *traceInput) (*traceOutput, error) {
		sum, err := svc.Trace(ctx, principal(ctx), in.Body.Scope, in.Body.Subject)
		if err != nil {
			return nil, problem(ctx, err)
		}
		return &traceOutput{Body: sum}, nil
	})
	huma.Register(api, op("create-request", http.MethodPost, "/v1/requests", "Create an erasure request (operator)", 201, 422), func(ctx context.Context, in *createRequestInput) (*requestOutput, error) {
		b := in.Body
		r, err := svc.CreateRequest(ctx, principal(ctx), service.NewRequest{Scope: b.Scope, Subject: b.Subject, Reason: b.Reason, ExternalRef: b.ExternalRef, Due: b.Due, CallbackURL: b.CallbackURL})
		if err != nil {
			return nil, problem(ctx, err)
		}
		return &requestOutput{Body: r}, nil
	})
	huma.Register(api, op("preview-request", http.MethodPost, "/v1/requests/{id}/preview", "Trace a request and get its confirmation (operator)", 200, 404, 409), func(ctx context.Context, in *idInput) (*previewOutput, error) {
		p, err := svc.Preview(ctx, principal(ctx), in.ID)
		if err != nil {
			return nil, problem(ctx, err)
		}
		return &previewOutput{Body: p}, nil
	})
	huma.Register(api, op("confirm-request", http.MethodPost, "/v1/requests/{id}/confirm", "Confirm a previewed request: queue its erasure (operator)", 200, 404, 409, 410, 422), func(ctx context.Context, in *confirmInput) (*requestOutput, error) {
		r, err := svc.Confirm(ctx, principal(ctx), in.ID, in.Body.Confirmation)
		if err != nil {
			return nil, problem(ctx, err)
		}
		return &requestOutput{Body: r}, nil
	})
	huma.Register(api, op("list-requests", http.MethodGet, "/v1/requests", "List erasure requests (operator, auditor)", 200, 422), func(ctx context.Context, in *listInput) (*listOutput, error) {
		f := service.RequestFilter{State: in.State}
		if in.Overdue != "" {
			v, _ := strconv.ParseBool(in.Overdue)
			f.Overdue = &v
		}
		rs, err := svc.Requests(ctx, principal(ctx), f)
		if err != nil {
			return nil, problem(ctx, err)
		}
		out := &listOutput{}
		out.Body.Requests = rs
		return out, nil
	})
	huma.Register(api, op("queue-status", http.MethodGet, "/v1/status", "The erasure queue at a glance, as 'amnesia status' shows it, for the token's scopes (operator, auditor)", 200, 422), func(ctx context.Context, in *statusInput) (*queueStatusOutput, error) {
		r, err := svc.QueueStatus(ctx, principal(ctx), in.Limit, in.All)
		if err != nil {
			return nil, problem(ctx, err)
		}
		return &queueStatusOutput{Body: r}, nil
	})
	huma.Register(api, op("get-request", http.MethodGet, "/v1/requests/{id}", "Read an erasure request (operator, auditor)", 200, 404), func(ctx context.Context, in *idInput) (*requestOutput, error) {
		r, err := svc.Request(ctx, principal(ctx), in.ID)
		if err != nil {
			return nil, problem(ctx, err)
		}
		return &requestOutput{Body: r}, nil
	})
	wh := op("intake-webhook", http.MethodPost, "/v1/intake/webhook", "Receive a privacy request from a platform (HMAC-signed, no bearer token)", 202, 413, 422)
	wh.Security, wh.Errors = []map[string][]string{{}}, []int{401, 413, 422, 429}
	wh.SkipValidateBody = true // checked after the signature
	huma.Register(api, wh, func(ctx context.Context, in *webhookInput) (*webhookOutput, error) {
		if err := service.VerifyWebhook(svc.WebhookSecret(), in.Timestamp, in.Signature, in.RawBody, time.Now()); err != nil {
			return nil, problem(ctx, err)
		}
		var w service.WebhookIntake
		if err := json.Unmarshal(in.RawBody, &w); err != nil {
			return nil, problem(ctx, service.Invalid("body", "want a JSON object {request_id, identity: {type, value}, due_at?, callback_url?, reason?}"))
		}
		r, err := svc.Intake(ctx, w)
		if err != nil {
			return nil, problem(ctx, err)
		}
		out := &webhookOutput{}
		out.Body.ID = r.ID
		return out, nil
	})
	huma.Register(api, op("get-certificate", http.MethodGet, "/v1/certificates/{id}", "Download a certificate bundle (operator, auditor)", 200, 404), func(ctx context.Context, in *certInput) (*bytesOutput, error) {
		b, err := svc.Certificate(ctx, principal(ctx), in.ID)
		if err != nil {
			return nil, problem(ctx, err)
		}
		return &bytesOutput{ContentType: certificate.BundleMediaType, Body: b}, nil
	})
	vop := op("verify-certificate", http.MethodPost, "/v1/verify", "Verify a certificate bundle against this installation's keys and log (operator, auditor)", 200, 413, 422)
	vop.MaxBodyBytes = max(body, service.MaxBundle+1)
	vop.SkipValidateBody = true // the bundle is checked by Verify
	huma.Register(api, vop, func(ctx context.Context, in *verifyInput) (*verifyOutput, error) {
		v, err := svc.Verify(ctx, principal(ctx), in.RawBody)
		if err != nil {
			return nil, problem(ctx, err)
		}
		return &verifyOutput{Body: v}, nil
	})
	huma.Register(api, op("log-checkpoint", http.MethodGet, "/v1/log/checkpoint", "The transparency log's signed checkpoint (operator, auditor)", 200), func(ctx context.Context, _ *struct{}) (*bytesOutput, error) {
		cp, err := svc.Checkpoint(ctx, principal(ctx))
		if err != nil {
			return nil, problem(ctx, err)
		}
		return &bytesOutput{ContentType: "text/plain; charset=utf-8", Body: []byte(cp)}, nil
	})
	huma.Register(api, op("log-consistency", http.MethodGet, "/v1/log/consistency", "A consistency proof between two log sizes (operator, auditor)", 200, 422), func(ctx context.Context, in *consistencyInput) (*proofOutput, error) {
		pr, err := svc.ConsistencyProof(ctx, principal(ctx), in.Old, in.New)
		if err != nil {
			return nil, problem(ctx, err)
		}
		out := &proofOutput{}
		out.Body.Proof = pr
		return out, nil
	})
	huma.Register(api, op("log-inclusion", http.MethodGet, "/v1/log/inclusion", "An inclusion proof of a leaf (operator, auditor)", 200, 422), func(ctx context.Context, in *inclusionInput) (*proofOutput, error) {
		pr, leaf, err := svc.InclusionProof(ctx, principal(ctx), in.Index, in.Size)
		if err != nil {
			return nil, problem(ctx, err)
		}
		out := &proofOutput{}
		out.Body.Proof, out.Body.LeafHash = pr, leaf
		return out, nil
	})
	huma.Register(api, op("public-keys", http.MethodGet, "/v1/keys", "The installation's public keys (any role)", 200), func(ctx context.Context, _ *struct{}) (*keysOutput, error) {
		ks, err := svc.PublicKeys(ctx, principal(ctx))
		if err != nil {
			return nil, problem(ctx, err)
		}
		out := &keysOutput{}
		out.Body.Keys = ks
		return out, nil
	})
	huma.Register(api, huma.Operation{OperationID: "healthz", Method: http.MethodGet, Path: "/healthz", Summary: "Liveness", Tags: []string{"ops"}}, func(ctx context.Context, _ *struct{}) (*statusOutput, error) {
		out := &statusOutput{}
		out.Body.Status = "ok"
		return out, nil
	})
	huma.Register(api, huma.Operation{OperationID: "readyz", Method: http.MethodGet, Path: "/readyz", Summary: "Readiness: the ledger is reachable and this host's configuration is the installation's", Tags: []string{"ops"}, Errors: []int{503}}, func(ctx context.Context, _ *struct{}) (*statusOutput, error) {
		if err := svc.Ready(ctx); err != nil {
			return nil, problem(ctx, err)
		}
		out := &statusOutput{}
		out.Body.Status = "ready"
		return out, nil
	})
}

// problem maps a service error to an RFC 9457 problem. Typed errors carry
// messages built without values; anything else is logged and answered with a
// generic 500, so no path, token or personal data leaves the server.
func problem(ctx context.Context, err error) error {
	var ie *service.InvalidError
	switch {
	case errors.As(err, &ie):
		return huma.NewError(http.StatusUnprocessableEntity, "the request is not valid", &huma.ErrorDetail{Location: "body." + ie.Field, Message: ie.Reason})
	case errors.Is(err, service.ErrUnauthorized):
		return huma.NewError(http.StatusUnauthorized, safeMessage(err))
	case errors.Is(err, service.ErrForbidden):
		return huma.NewError(http.StatusForbidden, safeMessage(err))
	case errors.Is(err, service.ErrNotFound):
		return huma.NewError(http.StatusNotFound, safeMessage(err))
	case errors.Is(err, service.ErrConflict):
		return huma.NewError(http.StatusConflict, safeMessage(err))
	case errors.Is(err, service.ErrExpired):
		return huma.NewError(http.StatusGone, safeMessage(err))
	case errors.Is(err, service.ErrUnavailable):
		return huma.NewError(http.StatusServiceUnavailable, safeMessage(err))
	case errors.Is(err, context.Canceled):
		return huma.NewError(http.StatusServiceUnavailable, "the server is shutting down; retry")
	}
	if l := loggerOf(ctx); l != nil {
		l.Error("request failed", "err", err.Error())
	}
	return huma.NewError(http.StatusInternalServerError, "internal error; the server's log has the details")
}

// safeMessage is the message of a typed service error: its text, which the
// service builds from constants.
func safeMessage(err error) string { return err.Error() }

func init() {
	// Validation details never echo the value the client sent (it may be a
	// subject id or a token); errors without a location are summarised.
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		details := make([]*huma.ErrorDetail, 0, len(errs))
		for _, e := range errs {
			var d huma.ErrorDetailer
			if errors.As(e, &d) {
				dd := d.ErrorDetail()
				details = append(details, &huma.ErrorDetail{Message: dd.Message, Location: dd.Location})
			}
		}
		if len(details) == 0 {
			details = nil
		}
		return &huma.ErrorModel{Status: status, Title: http.StatusText(status), Detail: msg, Errors: details}
	}
}
