export namespace app {
	
	export class ConnectInput {
	    harness: string;
	    slug: string;
	    displayName: string;
	    modelSlug?: string;
	    role?: string;
	    configureClient: boolean;
	    worker?: relay.WorkerConfig;
	
	    static createFrom(source: any = {}) {
	        return new ConnectInput(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.harness = source["harness"];
	        this.slug = source["slug"];
	        this.displayName = source["displayName"];
	        this.modelSlug = source["modelSlug"];
	        this.role = source["role"];
	        this.configureClient = source["configureClient"];
	        this.worker = this.convertValues(source["worker"], relay.WorkerConfig);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class ConnectResult {
	    agent: relay.Agent;
	    connection: harness.Connection;
	    token?: string;
	    worker?: relay.WorkerStatus;
	
	    static createFrom(source: any = {}) {
	        return new ConnectResult(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.agent = this.convertValues(source["agent"], relay.Agent);
	        this.connection = this.convertValues(source["connection"], harness.Connection);
	        this.token = source["token"];
	        this.worker = this.convertValues(source["worker"], relay.WorkerStatus);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class FilePreview {
	    path: string;
	    type: string;
	    size: number;
	    dataUrl: string;
	
	    static createFrom(source: any = {}) {
	        return new FilePreview(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.path = source["path"];
	        this.type = source["type"];
	        this.size = source["size"];
	        this.dataUrl = source["dataUrl"];
	    }
	}
	export class Harness {
	    id: string;
	    name: string;
	    path?: string;
	    version?: string;
	    tested?: string;
	    testedRange?: string;
	    canRun: boolean;
	    extraDirs: boolean;
	    safety?: string;
	    note?: string;
	    found: boolean;
	
	    static createFrom(source: any = {}) {
	        return new Harness(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.name = source["name"];
	        this.path = source["path"];
	        this.version = source["version"];
	        this.tested = source["tested"];
	        this.testedRange = source["testedRange"];
	        this.canRun = source["canRun"];
	        this.extraDirs = source["extraDirs"];
	        this.safety = source["safety"];
	        this.note = source["note"];
	        this.found = source["found"];
	    }
	}
	export class Info {
	    version: string;
	    operatorSlug: string;
	    dashboardUrl: string;
	    mcpUrl: string;
	    dataDir: string;
	    retentionDays: number;
	
	    static createFrom(source: any = {}) {
	        return new Info(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.version = source["version"];
	        this.operatorSlug = source["operatorSlug"];
	        this.dashboardUrl = source["dashboardUrl"];
	        this.mcpUrl = source["mcpUrl"];
	        this.dataDir = source["dataDir"];
	        this.retentionDays = source["retentionDays"];
	    }
	}
	export class InviteCreated {
	    invite: relay.Invite;
	    code: string;
	    message: string;
	
	    static createFrom(source: any = {}) {
	        return new InviteCreated(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.invite = this.convertValues(source["invite"], relay.Invite);
	        this.code = source["code"];
	        this.message = source["message"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class LocalInfo {
	    hostname: string;
	    home: string;
	    mcpUrl: string;
	    harnesses: Harness[];
	    searchPath: string;
	
	    static createFrom(source: any = {}) {
	        return new LocalInfo(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.hostname = source["hostname"];
	        this.home = source["home"];
	        this.mcpUrl = source["mcpUrl"];
	        this.harnesses = this.convertValues(source["harnesses"], Harness);
	        this.searchPath = source["searchPath"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class MeshSettingsView {
	    saved: relay.MeshSettings;
	    source: string;
	    applied: boolean;
	    error?: string;
	
	    static createFrom(source: any = {}) {
	        return new MeshSettingsView(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.saved = this.convertValues(source["saved"], relay.MeshSettings);
	        this.source = source["source"];
	        this.applied = source["applied"];
	        this.error = source["error"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class MeshStatus {
	    enabled: boolean;
	    relayId: string;
	    relayName: string;
	    publicKey: string;
	    link: string;
	    ready: boolean;
	    server?: string;
	    embedded?: string;
	    outboxDepth: number;
	    consumerLag: number;
	    consumerAckPending: number;
	    published: number;
	    applied: number;
	    duplicates: number;
	    failures: number;
	    lastError?: string;
	    conflicts?: string[];
	    directoryConflicts?: string[];
	    trust: string;
	    embedAuth?: string;
	    credential: mesh.CredentialCheck;
	    strict: boolean;
	    streamWarning?: string;
	    held: mesh.HeldInfo[];
	    refused: {[key: string]: number};
	    refusals?: string[];
	    warnings?: string[];
	    names: mesh.NameContest[];
	    keyChanges: mesh.KeyChange[];
	    relays: mesh.RelayInfo[];
	
	    static createFrom(source: any = {}) {
	        return new MeshStatus(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.enabled = source["enabled"];
	        this.relayId = source["relayId"];
	        this.relayName = source["relayName"];
	        this.publicKey = source["publicKey"];
	        this.link = source["link"];
	        this.ready = source["ready"];
	        this.server = source["server"];
	        this.embedded = source["embedded"];
	        this.outboxDepth = source["outboxDepth"];
	        this.consumerLag = source["consumerLag"];
	        this.consumerAckPending = source["consumerAckPending"];
	        this.published = source["published"];
	        this.applied = source["applied"];
	        this.duplicates = source["duplicates"];
	        this.failures = source["failures"];
	        this.lastError = source["lastError"];
	        this.conflicts = source["conflicts"];
	        this.directoryConflicts = source["directoryConflicts"];
	        this.trust = source["trust"];
	        this.embedAuth = source["embedAuth"];
	        this.credential = this.convertValues(source["credential"], mesh.CredentialCheck);
	        this.strict = source["strict"];
	        this.streamWarning = source["streamWarning"];
	        this.held = this.convertValues(source["held"], mesh.HeldInfo);
	        this.refused = source["refused"];
	        this.refusals = source["refusals"];
	        this.warnings = source["warnings"];
	        this.names = this.convertValues(source["names"], mesh.NameContest);
	        this.keyChanges = this.convertValues(source["keyChanges"], mesh.KeyChange);
	        this.relays = this.convertValues(source["relays"], mesh.RelayInfo);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class NewTask {
	    recipientSlug: string;
	    title: string;
	    instructions: string;
	    requiredCapabilities: string[];
	    priority: number;
	
	    static createFrom(source: any = {}) {
	        return new NewTask(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.recipientSlug = source["recipientSlug"];
	        this.title = source["title"];
	        this.instructions = source["instructions"];
	        this.requiredCapabilities = source["requiredCapabilities"];
	        this.priority = source["priority"];
	    }
	}
	export class SessionChoice {
	    tool: string;
	    id: string;
	    name?: string;
	    title?: string;
	    folder: string;
	    lastActive: string;
	    idle: boolean;
	
	    static createFrom(source: any = {}) {
	        return new SessionChoice(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.tool = source["tool"];
	        this.id = source["id"];
	        this.name = source["name"];
	        this.title = source["title"];
	        this.folder = source["folder"];
	        this.lastActive = source["lastActive"];
	        this.idle = source["idle"];
	    }
	}
	export class TaskDetail {
	    task: relay.Task;
	    related: relay.RelatedTasks;
	
	    static createFrom(source: any = {}) {
	        return new TaskDetail(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.task = this.convertValues(source["task"], relay.Task);
	        this.related = this.convertValues(source["related"], relay.RelatedTasks);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class TokenReveal {
	    agent: relay.Agent;
	    token: string;
	    mcpUrl: string;
	    setup: web.Setup;
	    instructions: string;
	
	    static createFrom(source: any = {}) {
	        return new TokenReveal(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.agent = this.convertValues(source["agent"], relay.Agent);
	        this.token = source["token"];
	        this.mcpUrl = source["mcpUrl"];
	        this.setup = this.convertValues(source["setup"], web.Setup);
	        this.instructions = source["instructions"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class WorkerLimits {
	    defaultTimeoutMinutes: number;
	    maxTimeoutMinutes: number;
	    defaultRunsPerHour: number;
	    maxRunsPerHour: number;
	    maxArgs: number;
	    maxExtraDirs: number;
	    maxSenders: number;
	    maxEnv: number;
	    maxAllowPaths: number;
	    envNamePattern: string;
	
	    static createFrom(source: any = {}) {
	        return new WorkerLimits(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.defaultTimeoutMinutes = source["defaultTimeoutMinutes"];
	        this.maxTimeoutMinutes = source["maxTimeoutMinutes"];
	        this.defaultRunsPerHour = source["defaultRunsPerHour"];
	        this.maxRunsPerHour = source["maxRunsPerHour"];
	        this.maxArgs = source["maxArgs"];
	        this.maxExtraDirs = source["maxExtraDirs"];
	        this.maxSenders = source["maxSenders"];
	        this.maxEnv = source["maxEnv"];
	        this.maxAllowPaths = source["maxAllowPaths"];
	        this.envNamePattern = source["envNamePattern"];
	    }
	}
	export class WorkersOverview {
	    paused: boolean;
	    maxChainDepth: number;
	    workers: relay.WorkerStatus[];
	
	    static createFrom(source: any = {}) {
	        return new WorkersOverview(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.paused = source["paused"];
	        this.maxChainDepth = source["maxChainDepth"];
	        this.workers = this.convertValues(source["workers"], relay.WorkerStatus);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}

}

export namespace harness {
	
	export class Connection {
	    configured: boolean;
	    message: string;
	    file?: string;
	    snippet?: string;
	
	    static createFrom(source: any = {}) {
	        return new Connection(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.configured = source["configured"];
	        this.message = source["message"];
	        this.file = source["file"];
	        this.snippet = source["snippet"];
	    }
	}

}

export namespace mesh {
	
	export class AgentInfo {
	    slug: string;
	    relaySlug?: string;
	    displayName: string;
	    modelSlug: string;
	    capabilities: string[];
	    online: boolean;
	    relayId: string;
	    relay: string;
	    local: boolean;
	
	    static createFrom(source: any = {}) {
	        return new AgentInfo(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.slug = source["slug"];
	        this.relaySlug = source["relaySlug"];
	        this.displayName = source["displayName"];
	        this.modelSlug = source["modelSlug"];
	        this.capabilities = source["capabilities"];
	        this.online = source["online"];
	        this.relayId = source["relayId"];
	        this.relay = source["relay"];
	        this.local = source["local"];
	    }
	}
	export class CredentialCheck {
	    checked: boolean;
	    can?: string[];
	    unknown?: string[];
	    listed: boolean;
	
	    static createFrom(source: any = {}) {
	        return new CredentialCheck(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.checked = source["checked"];
	        this.can = source["can"];
	        this.unknown = source["unknown"];
	        this.listed = source["listed"];
	    }
	}
	export class HeldInfo {
	    msgId: string;
	    relayId: string;
	    relay: string;
	    reason: string;
	    taskId: string;
	    title: string;
	    sender: string;
	    recipient: string;
	    receivedAt: string;
	
	    static createFrom(source: any = {}) {
	        return new HeldInfo(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.msgId = source["msgId"];
	        this.relayId = source["relayId"];
	        this.relay = source["relay"];
	        this.reason = source["reason"];
	        this.taskId = source["taskId"];
	        this.title = source["title"];
	        this.sender = source["sender"];
	        this.recipient = source["recipient"];
	        this.receivedAt = source["receivedAt"];
	    }
	}
	export class Invite {
	    url: string;
	    command: string;
	    env: string;
	    expiresAt?: string;
	    files?: {[key: string]: string};
	    note?: string;
	
	    static createFrom(source: any = {}) {
	        return new Invite(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.url = source["url"];
	        this.command = source["command"];
	        this.env = source["env"];
	        this.expiresAt = source["expiresAt"];
	        this.files = source["files"];
	        this.note = source["note"];
	    }
	}
	export class KeyChange {
	    relayId: string;
	    relay: string;
	    pinned: string;
	    shown: string;
	
	    static createFrom(source: any = {}) {
	        return new KeyChange(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.relayId = source["relayId"];
	        this.relay = source["relay"];
	        this.pinned = source["pinned"];
	        this.shown = source["shown"];
	    }
	}
	export class NATSUser {
	    relayId: string;
	    name: string;
	    self: boolean;
	    nkey: string;
	    fingerprint: string;
	    publish: string[];
	    publishDeny: string[];
	    subscribe: string[];
	    config: string;
	
	    static createFrom(source: any = {}) {
	        return new NATSUser(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.relayId = source["relayId"];
	        this.name = source["name"];
	        this.self = source["self"];
	        this.nkey = source["nkey"];
	        this.fingerprint = source["fingerprint"];
	        this.publish = source["publish"];
	        this.publishDeny = source["publishDeny"];
	        this.subscribe = source["subscribe"];
	        this.config = source["config"];
	    }
	}
	export class NATSConfig {
	    account: string;
	    users: NATSUser[];
	    text: string;
	
	    static createFrom(source: any = {}) {
	        return new NATSConfig(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.account = source["account"];
	        this.users = this.convertValues(source["users"], NATSUser);
	        this.text = source["text"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	
	export class NameHolder {
	    name: string;
	    relayId: string;
	    relay: string;
	    slug?: string;
	
	    static createFrom(source: any = {}) {
	        return new NameHolder(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.name = source["name"];
	        this.relayId = source["relayId"];
	        this.relay = source["relay"];
	        this.slug = source["slug"];
	    }
	}
	export class NameContest {
	    slug: string;
	    holderId: string;
	    holder: string;
	    others: NameHolder[];
	
	    static createFrom(source: any = {}) {
	        return new NameContest(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.slug = source["slug"];
	        this.holderId = source["holderId"];
	        this.holder = source["holder"];
	        this.others = this.convertValues(source["others"], NameHolder);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	
	export class RelayInfo {
	    id: string;
	    name: string;
	    address?: string;
	    online: boolean;
	    lastSeen: string;
	    agents: number;
	    outboxDepth: number;
	    consumerLag: number;
	    self: boolean;
	    state: string;
	    fingerprint: string;
	    newFingerprint?: string;
	    inDirectory: boolean;
	    previousName?: string;
	    nameIssue?: string;
	
	    static createFrom(source: any = {}) {
	        return new RelayInfo(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.name = source["name"];
	        this.address = source["address"];
	        this.online = source["online"];
	        this.lastSeen = source["lastSeen"];
	        this.agents = source["agents"];
	        this.outboxDepth = source["outboxDepth"];
	        this.consumerLag = source["consumerLag"];
	        this.self = source["self"];
	        this.state = source["state"];
	        this.fingerprint = source["fingerprint"];
	        this.newFingerprint = source["newFingerprint"];
	        this.inDirectory = source["inDirectory"];
	        this.previousName = source["previousName"];
	        this.nameIssue = source["nameIssue"];
	    }
	}

}

export namespace relay {
	
	export class ChangedFile {
	    path: string;
	    change: string;
	    size?: number;
	
	    static createFrom(source: any = {}) {
	        return new ChangedFile(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.path = source["path"];
	        this.change = source["change"];
	        this.size = source["size"];
	    }
	}
	export class ActivityEntry {
	    seq: number;
	    at: string;
	    kind: string;
	    text: string;
	    detail?: string;
	    status?: string;
	    ref?: string;
	    files?: ChangedFile[];
	
	    static createFrom(source: any = {}) {
	        return new ActivityEntry(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.seq = source["seq"];
	        this.at = source["at"];
	        this.kind = source["kind"];
	        this.text = source["text"];
	        this.detail = source["detail"];
	        this.status = source["status"];
	        this.ref = source["ref"];
	        this.files = this.convertValues(source["files"], ChangedFile);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class OpenWork {
	    slug: string;
	    queued: number;
	    claimed: number;
	    blocked: number;
	
	    static createFrom(source: any = {}) {
	        return new OpenWork(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.slug = source["slug"];
	        this.queued = source["queued"];
	        this.claimed = source["claimed"];
	        this.blocked = source["blocked"];
	    }
	}
	export class Durations {
	    count: number;
	    medianMs: number;
	    p90Ms: number;
	
	    static createFrom(source: any = {}) {
	        return new Durations(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.count = source["count"];
	        this.medianMs = source["medianMs"];
	        this.p90Ms = source["p90Ms"];
	    }
	}
	export class AgentLatency {
	    slug: string;
	    claim: Durations;
	    finish: Durations;
	
	    static createFrom(source: any = {}) {
	        return new AgentLatency(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.slug = source["slug"];
	        this.claim = this.convertValues(source["claim"], Durations);
	        this.finish = this.convertValues(source["finish"], Durations);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class ThroughputBucket {
	    start: string;
	    posted: number;
	    completed: number;
	    blocked: number;
	
	    static createFrom(source: any = {}) {
	        return new ThroughputBucket(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.start = source["start"];
	        this.posted = source["posted"];
	        this.completed = source["completed"];
	        this.blocked = source["blocked"];
	    }
	}
	export class ActivityInsights {
	    throughput: ThroughputBucket[];
	    latencySince: string;
	    latencies: AgentLatency[];
	    openWork: OpenWork[];
	    at: string;
	
	    static createFrom(source: any = {}) {
	        return new ActivityInsights(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.throughput = this.convertValues(source["throughput"], ThroughputBucket);
	        this.latencySince = source["latencySince"];
	        this.latencies = this.convertValues(source["latencies"], AgentLatency);
	        this.openWork = this.convertValues(source["openWork"], OpenWork);
	        this.at = source["at"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class OwnerSet {
	    displayName: boolean;
	    details: boolean;
	
	    static createFrom(source: any = {}) {
	        return new OwnerSet(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.displayName = source["displayName"];
	        this.details = source["details"];
	    }
	}
	export class Agent {
	    slug: string;
	    kind: string;
	    displayName: string;
	    modelSlug: string;
	    capabilities: string[];
	    details?: string;
	    registeredAt: string;
	    lastSeenAt: string;
	    hasToken: boolean;
	    ownerSet: OwnerSet;
	    availability: string;
	    connected?: boolean;
	    relay?: string;
	    enrolled?: boolean;
	    retiredAt?: string;
	
	    static createFrom(source: any = {}) {
	        return new Agent(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.slug = source["slug"];
	        this.kind = source["kind"];
	        this.displayName = source["displayName"];
	        this.modelSlug = source["modelSlug"];
	        this.capabilities = source["capabilities"];
	        this.details = source["details"];
	        this.registeredAt = source["registeredAt"];
	        this.lastSeenAt = source["lastSeenAt"];
	        this.hasToken = source["hasToken"];
	        this.ownerSet = this.convertValues(source["ownerSet"], OwnerSet);
	        this.availability = source["availability"];
	        this.connected = source["connected"];
	        this.relay = source["relay"];
	        this.enrolled = source["enrolled"];
	        this.retiredAt = source["retiredAt"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class AgentCounts {
	    total: number;
	    online: number;
	
	    static createFrom(source: any = {}) {
	        return new AgentCounts(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.total = source["total"];
	        this.online = source["online"];
	    }
	}
	
	export class OutcomeBucket {
	    start: string;
	    completed: number;
	    blocked: number;
	
	    static createFrom(source: any = {}) {
	        return new OutcomeBucket(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.start = source["start"];
	        this.completed = source["completed"];
	        this.blocked = source["blocked"];
	    }
	}
	export class AgentOutcomes {
	    slug: string;
	    buckets: OutcomeBucket[];
	    completed: number;
	    blocked: number;
	
	    static createFrom(source: any = {}) {
	        return new AgentOutcomes(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.slug = source["slug"];
	        this.buckets = this.convertValues(source["buckets"], OutcomeBucket);
	        this.completed = source["completed"];
	        this.blocked = source["blocked"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	
	export class ConversationTask {
	    id: string;
	    parentTaskId?: string;
	    senderSlug: string;
	    recipientSlug: string;
	    title: string;
	    status: string;
	    hops: number;
	    createdAt: string;
	    claimedAt?: string;
	    updatedAt: string;
	
	    static createFrom(source: any = {}) {
	        return new ConversationTask(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.parentTaskId = source["parentTaskId"];
	        this.senderSlug = source["senderSlug"];
	        this.recipientSlug = source["recipientSlug"];
	        this.title = source["title"];
	        this.status = source["status"];
	        this.hops = source["hops"];
	        this.createdAt = source["createdAt"];
	        this.claimedAt = source["claimedAt"];
	        this.updatedAt = source["updatedAt"];
	    }
	}
	export class Conversation {
	    id: string;
	    tasks: ConversationTask[];
	    truncated?: boolean;
	
	    static createFrom(source: any = {}) {
	        return new Conversation(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.tasks = this.convertValues(source["tasks"], ConversationTask);
	        this.truncated = source["truncated"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	
	export class CreateAgentInput {
	    slug: string;
	    displayName: string;
	    modelSlug: string;
	    capabilities: string[];
	    details?: string;
	    kind?: string;
	
	    static createFrom(source: any = {}) {
	        return new CreateAgentInput(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.slug = source["slug"];
	        this.displayName = source["displayName"];
	        this.modelSlug = source["modelSlug"];
	        this.capabilities = source["capabilities"];
	        this.details = source["details"];
	        this.kind = source["kind"];
	    }
	}
	
	export class Event {
	    sequence: number;
	    recipientSlug: string;
	    type: string;
	    taskId: string;
	    summary: string;
	    createdAt: string;
	
	    static createFrom(source: any = {}) {
	        return new Event(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.sequence = source["sequence"];
	        this.recipientSlug = source["recipientSlug"];
	        this.type = source["type"];
	        this.taskId = source["taskId"];
	        this.summary = source["summary"];
	        this.createdAt = source["createdAt"];
	    }
	}
	export class EventFilter {
	    agent?: string;
	    before?: number;
	    limit?: number;
	
	    static createFrom(source: any = {}) {
	        return new EventFilter(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.agent = source["agent"];
	        this.before = source["before"];
	        this.limit = source["limit"];
	    }
	}
	export class FirstTask {
	    title: string;
	    instructions: string;
	    priority: number;
	
	    static createFrom(source: any = {}) {
	        return new FirstTask(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.title = source["title"];
	        this.instructions = source["instructions"];
	        this.priority = source["priority"];
	    }
	}
	export class Invite {
	    id: string;
	    label?: string;
	    createdAt: string;
	    expiresAt: string;
	    maxUses?: number;
	    uses: number;
	    revoked: boolean;
	    active: boolean;
	    agents: string[];
	    displayName?: string;
	    role?: string;
	    firstTask?: FirstTask;
	
	    static createFrom(source: any = {}) {
	        return new Invite(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.label = source["label"];
	        this.createdAt = source["createdAt"];
	        this.expiresAt = source["expiresAt"];
	        this.maxUses = source["maxUses"];
	        this.uses = source["uses"];
	        this.revoked = source["revoked"];
	        this.active = source["active"];
	        this.agents = source["agents"];
	        this.displayName = source["displayName"];
	        this.role = source["role"];
	        this.firstTask = this.convertValues(source["firstTask"], FirstTask);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class InviteInput {
	    label?: string;
	    expiresInHours: number;
	    maxUses?: number;
	    displayName?: string;
	    role?: string;
	    firstTask?: FirstTask;
	
	    static createFrom(source: any = {}) {
	        return new InviteInput(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.label = source["label"];
	        this.expiresInHours = source["expiresInHours"];
	        this.maxUses = source["maxUses"];
	        this.displayName = source["displayName"];
	        this.role = source["role"];
	        this.firstTask = this.convertValues(source["firstTask"], FirstTask);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class LastRun {
	    taskId: string;
	    title: string;
	    outcome: string;
	    finishedAt: string;
	    summary: string;
	    refused?: string[];
	    undone?: string[];
	
	    static createFrom(source: any = {}) {
	        return new LastRun(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.taskId = source["taskId"];
	        this.title = source["title"];
	        this.outcome = source["outcome"];
	        this.finishedAt = source["finishedAt"];
	        this.summary = source["summary"];
	        this.refused = source["refused"];
	        this.undone = source["undone"];
	    }
	}
	export class MeshSettings {
	    urls: string[];
	    creds: string;
	    nkey: string;
	    tlsCa: string;
	    embed: string;
	    name: string;
	    strict: boolean;
	
	    static createFrom(source: any = {}) {
	        return new MeshSettings(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.urls = source["urls"];
	        this.creds = source["creds"];
	        this.nkey = source["nkey"];
	        this.tlsCa = source["tlsCa"];
	        this.embed = source["embed"];
	        this.name = source["name"];
	        this.strict = source["strict"];
	    }
	}
	export class NameChange {
	    from: string;
	    to: string;
	
	    static createFrom(source: any = {}) {
	        return new NameChange(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.from = source["from"];
	        this.to = source["to"];
	    }
	}
	
	
	
	export class ProfileUpdate {
	    displayName?: string;
	    details?: string;
	
	    static createFrom(source: any = {}) {
	        return new ProfileUpdate(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.displayName = source["displayName"];
	        this.details = source["details"];
	    }
	}
	export class ReportExcerpt {
	    kind: string;
	    message: string;
	    createdAt: string;
	
	    static createFrom(source: any = {}) {
	        return new ReportExcerpt(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.kind = source["kind"];
	        this.message = source["message"];
	        this.createdAt = source["createdAt"];
	    }
	}
	export class TaskSummary {
	    id: string;
	    senderSlug: string;
	    recipientSlug: string;
	    title: string;
	    requiredCapabilities: string[];
	    priority: number;
	    status: string;
	    createdAt: string;
	    updatedAt: string;
	    claimedAt?: string;
	    leaseExpiresAt?: string;
	    parentTaskId?: string;
	    depth: number;
	    conversationId: string;
	    hops: number;
	    targetSession?: string;
	    claimedVia?: string;
	    reportCount: number;
	    latestReport?: ReportExcerpt;
	
	    static createFrom(source: any = {}) {
	        return new TaskSummary(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.senderSlug = source["senderSlug"];
	        this.recipientSlug = source["recipientSlug"];
	        this.title = source["title"];
	        this.requiredCapabilities = source["requiredCapabilities"];
	        this.priority = source["priority"];
	        this.status = source["status"];
	        this.createdAt = source["createdAt"];
	        this.updatedAt = source["updatedAt"];
	        this.claimedAt = source["claimedAt"];
	        this.leaseExpiresAt = source["leaseExpiresAt"];
	        this.parentTaskId = source["parentTaskId"];
	        this.depth = source["depth"];
	        this.conversationId = source["conversationId"];
	        this.hops = source["hops"];
	        this.targetSession = source["targetSession"];
	        this.claimedVia = source["claimedVia"];
	        this.reportCount = source["reportCount"];
	        this.latestReport = this.convertValues(source["latestReport"], ReportExcerpt);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class RelatedTasks {
	    parent?: TaskSummary;
	    children: TaskSummary[];
	
	    static createFrom(source: any = {}) {
	        return new RelatedTasks(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.parent = this.convertValues(source["parent"], TaskSummary);
	        this.children = this.convertValues(source["children"], TaskSummary);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class Report {
	    id: string;
	    kind: string;
	    message: string;
	    result?: string;
	    createdAt: string;
	
	    static createFrom(source: any = {}) {
	        return new Report(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.kind = source["kind"];
	        this.message = source["message"];
	        this.result = source["result"];
	        this.createdAt = source["createdAt"];
	    }
	}
	
	export class RunningTask {
	    id: string;
	    title: string;
	    startedAt: string;
	
	    static createFrom(source: any = {}) {
	        return new RunningTask(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.title = source["title"];
	        this.startedAt = source["startedAt"];
	    }
	}
	export class Settings {
	    maxChainDepth: number;
	    workersPaused: boolean;
	    maxOpenTasksPerSender?: number;
	
	    static createFrom(source: any = {}) {
	        return new Settings(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.maxChainDepth = source["maxChainDepth"];
	        this.workersPaused = source["workersPaused"];
	        this.maxOpenTasksPerSender = source["maxOpenTasksPerSender"];
	    }
	}
	export class TaskCounts {
	    queued: number;
	    claimed: number;
	    blocked: number;
	    completed: number;
	    cancelled: number;
	
	    static createFrom(source: any = {}) {
	        return new TaskCounts(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.queued = source["queued"];
	        this.claimed = source["claimed"];
	        this.blocked = source["blocked"];
	        this.completed = source["completed"];
	        this.cancelled = source["cancelled"];
	    }
	}
	export class Stats {
	    tasks: TaskCounts;
	    agents: AgentCounts;
	    doneToday: number;
	
	    static createFrom(source: any = {}) {
	        return new Stats(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.tasks = this.convertValues(source["tasks"], TaskCounts);
	        this.agents = this.convertValues(source["agents"], AgentCounts);
	        this.doneToday = source["doneToday"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class Task {
	    id: string;
	    senderSlug: string;
	    recipientSlug: string;
	    title: string;
	    instructions: string;
	    requiredCapabilities: string[];
	    priority: number;
	    status: string;
	    createdAt: string;
	    updatedAt: string;
	    claimedAt?: string;
	    leaseExpiresAt?: string;
	    parentTaskId?: string;
	    depth: number;
	    conversationId: string;
	    hops: number;
	    targetSession?: string;
	    replySession?: string;
	    claimedVia?: string;
	    reports: Report[];
	    signature?: string;
	
	    static createFrom(source: any = {}) {
	        return new Task(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.senderSlug = source["senderSlug"];
	        this.recipientSlug = source["recipientSlug"];
	        this.title = source["title"];
	        this.instructions = source["instructions"];
	        this.requiredCapabilities = source["requiredCapabilities"];
	        this.priority = source["priority"];
	        this.status = source["status"];
	        this.createdAt = source["createdAt"];
	        this.updatedAt = source["updatedAt"];
	        this.claimedAt = source["claimedAt"];
	        this.leaseExpiresAt = source["leaseExpiresAt"];
	        this.parentTaskId = source["parentTaskId"];
	        this.depth = source["depth"];
	        this.conversationId = source["conversationId"];
	        this.hops = source["hops"];
	        this.targetSession = source["targetSession"];
	        this.replySession = source["replySession"];
	        this.claimedVia = source["claimedVia"];
	        this.reports = this.convertValues(source["reports"], Report);
	        this.signature = source["signature"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	
	export class TaskFilter {
	    statuses?: string[];
	    agent?: string;
	    query?: string;
	    limit?: number;
	
	    static createFrom(source: any = {}) {
	        return new TaskFilter(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.statuses = source["statuses"];
	        this.agent = source["agent"];
	        this.query = source["query"];
	        this.limit = source["limit"];
	    }
	}
	
	
	export class WorkerConfig {
	    agentSlug: string;
	    harness: string;
	    command: string;
	    args: string[];
	    promptMode: string;
	    workdir: string;
	    extraDirs: string[];
	    allowedSenders: string[];
	    timeoutMinutes: number;
	    runsPerHour: number;
	    exclusive: boolean;
	    enabled: boolean;
	    env: string[];
	    session?: string;
	    sessionId?: string;
	    sessionLabel?: string;
	    anySession?: boolean;
	    sandbox: string;
	    allowPaths: string[];
	    allowUnsandboxed: boolean;
	    allowHookEdits?: boolean;
	    pinned?: {[key: string]: string};
	    createdAt?: string;
	    updatedAt?: string;
	
	    static createFrom(source: any = {}) {
	        return new WorkerConfig(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.agentSlug = source["agentSlug"];
	        this.harness = source["harness"];
	        this.command = source["command"];
	        this.args = source["args"];
	        this.promptMode = source["promptMode"];
	        this.workdir = source["workdir"];
	        this.extraDirs = source["extraDirs"];
	        this.allowedSenders = source["allowedSenders"];
	        this.timeoutMinutes = source["timeoutMinutes"];
	        this.runsPerHour = source["runsPerHour"];
	        this.exclusive = source["exclusive"];
	        this.enabled = source["enabled"];
	        this.env = source["env"];
	        this.session = source["session"];
	        this.sessionId = source["sessionId"];
	        this.sessionLabel = source["sessionLabel"];
	        this.anySession = source["anySession"];
	        this.sandbox = source["sandbox"];
	        this.allowPaths = source["allowPaths"];
	        this.allowUnsandboxed = source["allowUnsandboxed"];
	        this.allowHookEdits = source["allowHookEdits"];
	        this.pinned = source["pinned"];
	        this.createdAt = source["createdAt"];
	        this.updatedAt = source["updatedAt"];
	    }
	}
	export class WorkerStatus {
	    agentSlug: string;
	    harness: string;
	    command: string;
	    args: string[];
	    promptMode: string;
	    workdir: string;
	    extraDirs: string[];
	    allowedSenders: string[];
	    timeoutMinutes: number;
	    runsPerHour: number;
	    exclusive: boolean;
	    enabled: boolean;
	    env: string[];
	    session?: string;
	    sessionId?: string;
	    sessionLabel?: string;
	    anySession?: boolean;
	    sandbox: string;
	    allowPaths: string[];
	    allowUnsandboxed: boolean;
	    allowHookEdits?: boolean;
	    pinned?: {[key: string]: string};
	    createdAt?: string;
	    updatedAt?: string;
	    state: string;
	    resumesAt?: string;
	    currentTask?: RunningTask;
	    lastRun?: LastRun;
	    error?: string;
	
	    static createFrom(source: any = {}) {
	        return new WorkerStatus(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.agentSlug = source["agentSlug"];
	        this.harness = source["harness"];
	        this.command = source["command"];
	        this.args = source["args"];
	        this.promptMode = source["promptMode"];
	        this.workdir = source["workdir"];
	        this.extraDirs = source["extraDirs"];
	        this.allowedSenders = source["allowedSenders"];
	        this.timeoutMinutes = source["timeoutMinutes"];
	        this.runsPerHour = source["runsPerHour"];
	        this.exclusive = source["exclusive"];
	        this.enabled = source["enabled"];
	        this.env = source["env"];
	        this.session = source["session"];
	        this.sessionId = source["sessionId"];
	        this.sessionLabel = source["sessionLabel"];
	        this.anySession = source["anySession"];
	        this.sandbox = source["sandbox"];
	        this.allowPaths = source["allowPaths"];
	        this.allowUnsandboxed = source["allowUnsandboxed"];
	        this.allowHookEdits = source["allowHookEdits"];
	        this.pinned = source["pinned"];
	        this.createdAt = source["createdAt"];
	        this.updatedAt = source["updatedAt"];
	        this.state = source["state"];
	        this.resumesAt = source["resumesAt"];
	        this.currentTask = this.convertValues(source["currentTask"], RunningTask);
	        this.lastRun = this.convertValues(source["lastRun"], LastRun);
	        this.error = source["error"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}

}

export namespace web {
	
	export class Setup {
	    claudeCode: string;
	    claudeChannel: string;
	    claudeChannelStart: string;
	    codex: string;
	    json: {[key: string]: any};
	    generic: string;
	
	    static createFrom(source: any = {}) {
	        return new Setup(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.claudeCode = source["claudeCode"];
	        this.claudeChannel = source["claudeChannel"];
	        this.claudeChannelStart = source["claudeChannelStart"];
	        this.codex = source["codex"];
	        this.json = source["json"];
	        this.generic = source["generic"];
	    }
	}

}

