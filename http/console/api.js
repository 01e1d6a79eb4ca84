// api.js: the console's only way to the node. Every call is a GET with the
// token as a bearer header; the console writes nothing. Paths are relative to
// the API's root, found from the page's own address (/v1/console/ → /v1/), so
// the console works unchanged behind a proxy that serves the node under a
// prefix.

export const apiRoot = new URL("../", location.href);

// ApiError is a refused or failed call: status 0 when the node could not be
// reached at all.
export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

export class Api {
  // onUnauthorized is called when the node refuses the token (401): it was
  // rotated or revoked while the console was open.
  constructor(token, onUnauthorized) {
    this.token = token;
    this.onUnauthorized = onUnauthorized;
  }

  url(path, params) {
    const url = new URL(path, apiRoot);
    for (const [k, v] of Object.entries(params ?? {})) {
      if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, String(v));
    }
    return url;
  }

  async get(path, params) {
    let res;
    try {
      res = await fetch(this.url(path, params), {
        headers: { Authorization: `Bearer ${this.token}`, Accept: "application/json" },
        cache: "no-store",
        credentials: "omit",
        redirect: "error",
      });
    } catch {
      throw new ApiError(0, "unreachable", "the node could not be reached");
    }
    let body = null;
    try {
      body = await res.json();
    } catch {
      // Not JSON: a proxy's page, say. The status still tells.
    }
    if (!res.ok) {
      const err = new ApiError(res.status, body?.code ?? "", body?.error ?? `HTTP ${res.status}`, body?.field);
      if (res.status === 401) this.onUnauthorized?.(err);
      throw err;
    }
    return body;
  }

  // pages follows a cursor-paged list (missions, identities) until maxPages.
  async *pages(path, params, key, maxPages = 20) {
    let cursor;
    for (let i = 0; i < maxPages; i++) {
      const page = await this.get(path, { ...params, cursor });
      yield page[key] ?? [];
      cursor = page.next_cursor;
      if (!cursor) return;
    }
  }

  // events pages GET /v1/events by since= as docs/api.md prescribes: while
  // total is larger than what a page held, ask again after the last event.
  // It stops after maxPages and says so (complete: false).
  async events(params, maxPages = 50) {
    const all = [];
    let since = params.since;
    for (let i = 0; i < maxPages; i++) {
      const page = await this.get("events", { ...params, since, limit: 1000 });
      all.push(...page.events);
      if (page.events.length === 0 || page.events.length >= page.total) return { events: all, complete: true };
      since = page.events[page.events.length - 1].timestamp;
    }
    return { events: all, complete: false };
  }

  streamURL(params) {
    const url = this.url("stream", { ...params, token: this.token });
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    return url;
  }
}

// explain turns a refusal into what a panel says instead of its data.
export function explain(err, what) {
  if (!(err instanceof ApiError)) return `Could not show ${what}: ${err?.message ?? err}.`;
  switch (err.status) {
    case 0:
      return `Could not show ${what}: the node could not be reached.`;
    case 401:
      return "The node no longer accepts this token.";
    case 403:
      return `This token may not read ${what} (the node says: ${err.message}).`;
    case 404:
      return `This node does not serve ${what}.`;
    case 429:
      return `Could not show ${what} now: the token is over its rate limit; reload in a moment.`;
    case 502:
      return `The agent registry could not be reached (the node says: ${err.message}).`;
    case 504:
      return `The agent registry did not answer in time (the node says: ${err.message}).`;
    default:
      return `Could not show ${what} (${err.status}${err.code ? ` ${err.code}` : ""}: ${err.message}).`;
  }
}
