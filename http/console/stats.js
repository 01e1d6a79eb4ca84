// stats.js: the data behind the charts, read from the event log and kept
// current from the live feed. Each model reads the log up to some seq and then
// takes only live events above it, so an event is counted once whether the
// read or the stream's replay brought it first; events that arrive while the
// model is still reading are held until it is done.

const MINUTE = 60e3;
const minuteOf = (t) => Math.floor(t / MINUTE) * MINUTE;

// justBefore is the RFC 3339 time one microsecond before t: since= keeps
// events strictly later, and event times have microseconds, so since=
// justBefore(t) keeps exactly the events at or after t.
function justBefore(t) {
  return new Date(t - 1).toISOString().replace("Z", "999Z");
}

async function mapLimit(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

class Live {
  constructor() {
    this.ready = false;
    this.early = [];
    this.through = 0; // the highest seq taken into account
  }

  // add takes a live event; it reports whether the model changed.
  add(ev) {
    if (!this.ready) {
      this.early.push(ev);
      return false;
    }
    if (ev.seq <= this.through) return false;
    this.through = ev.seq;
    return this.take(ev);
  }

  settle(through) {
    this.through = Math.max(this.through, through);
    this.ready = true;
    for (const ev of this.early.splice(0)) this.add(ev);
  }
}

// Folded is a Live model built by folding every event of one type filter from
// the log (paged, so complete says whether it saw them all), then the live ones.
class Folded extends Live {
  constructor(type) {
    super();
    this.type = type;
    this.complete = true;
  }

  async load(api) {
    const { events, complete } = await api.events({ type: this.type });
    this.complete = complete;
    let through = 0;
    for (const ev of events) {
      this.take(ev);
      through = ev.seq;
    }
    this.settle(through);
  }
}

// EventRate counts events per minute over the last hour. It asks the log, for
// each minute's start, for the first event after it (since=…&limit=1): seqs
// have no gaps and times strictly increase, so the events of a minute are the
// difference of two such seqs, exactly, however busy the node. That is 60
// small requests, whatever the hour held.
export class EventRate extends Live {
  constructor() {
    super();
    this.buckets = new Map();
  }

  async load(api, tipSeq, now = Date.now()) {
    const end = minuteOf(now) + MINUTE;
    const starts = Array.from({ length: 60 }, (_, i) => end - (60 - i) * MINUTE);
    const firsts = await mapLimit(starts, 6, async (t) => {
      const page = await api.get("events", { since: justBefore(t), limit: 1 });
      return page.events.length ? page.events[0].seq : Infinity;
    });
    const cap = tipSeq + 1; // events above the tip come from the stream
    const f = [...firsts.map((x) => Math.min(x, cap)), cap];
    starts.forEach((t, i) => this.buckets.set(t, f[i + 1] - f[i]));
    this.settle(tipSeq);
  }

  take(ev) {
    const t = minuteOf(Date.parse(ev.timestamp));
    this.buckets.set(t, (this.buckets.get(t) ?? 0) + 1);
    return true;
  }

  series(now = Date.now()) {
    const end = minuteOf(now) + MINUTE;
    for (const t of this.buckets.keys()) if (t < end - 60 * MINUTE) this.buckets.delete(t);
    return Array.from({ length: 60 }, (_, i) => {
      const t = end - (60 - i) * MINUTE;
      return { t, count: this.buckets.get(t) ?? 0 };
    });
  }
}

const NEXT_STATE = {
  "mission.created": "created",
  "mission.accepted": "claimed",
  "mission.completed": "completed",
  "mission.settled": "settled",
};

// MissionStates folds the mission events into the number of missions in each
// state after every event.
export class MissionStates extends Folded {
  constructor() {
    super("mission.*");
    this.state = new Map();
    this.counts = { created: 0, claimed: 0, completed: 0, settled: 0 };
    this.points = [];
  }

  take(ev) {
    const next = NEXT_STATE[ev.type];
    const id = ev.payload?.mission_id;
    if (!next || typeof id !== "string") return false;
    const prev = this.state.get(id);
    if (prev) this.counts[prev]--;
    this.counts[next]++;
    this.state.set(id, next);
    this.points.push({ t: Date.parse(ev.timestamp), counts: { ...this.counts } });
    return true;
  }

  // at is the count by state at time t.
  at(t) {
    let lo = 0;
    let hi = this.points.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.points[mid].t <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo === 0 ? { created: 0, claimed: 0, completed: 0, settled: 0 } : this.points[lo - 1].counts;
  }

  // span is the window to draw: from the first mission event, or a day ago
  // if that is later, to now.
  span(now = Date.now()) {
    const first = this.points[0]?.t ?? now - 3600e3;
    return [Math.max(first, now - 86400e3), now];
  }
}

// SubnetCredits sums what the settlements paid, per subnet: to the completing
// agents and to the subnet's treasury (payment.settled of a mission).
export class SubnetCredits extends Folded {
  constructor() {
    super("payment.settled");
    this.bySubnet = new Map();
  }

  take(ev) {
    const p = ev.payload;
    if (ev.type !== "payment.settled" || typeof p?.mission_id !== "string" || typeof p.treasury !== "string") return false;
    const row = this.bySubnet.get(p.treasury) ?? { subnet: p.treasury, agent: 0, treasury: 0 };
    row.agent += Number(p.agent_credit) || 0;
    row.treasury += Number(p.treasury_share_credit) || 0;
    this.bySubnet.set(p.treasury, row);
    return true;
  }

  rows() {
    return [...this.bySubnet.values()].sort((a, b) => b.agent + b.treasury - (a.agent + a.treasury) || a.subnet.localeCompare(b.subnet));
  }
}
