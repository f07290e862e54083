/**
 * Discovery, checked before anything is sent to it: the server's protected-resource metadata
 * and its authorization server's metadata (found by the SDK), the issuer they name, HTTPS off
 * loopback, and PKCE S256 advertised (SDK 1.32.2 proceeds without it; the spec says refuse).
 */
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  type OAuthDiscoveryState,
} from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { messageOf } from '../../../errors.js';
import { brief, SignInError } from './errors.js';

/** 127.0.0.0/8, ::1 and localhost: the only places plain HTTP is accepted. */
function isLoopback(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
/** An endpoint metadata names: HTTPS, or HTTP on loopback only. */
export function checkEndpoint(what: string, value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SignInError('bad_metadata', `the ${what} "${brief(value)}" is not a URL; refused`);
  }
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url))) return;
  throw new SignInError('bad_metadata', `the ${what} ${url.href} is not HTTPS; refused (plain HTTP only on loopback)`);
}

/** RFC 8414 §3.3: the issuer is the URL metadata was found for; one trailing slash does not matter. */
export function sameIssuer(a: string, b: string): boolean {
  const norm = (s: string): string => {
    try {
      return new URL(s).href.replace(/\/$/, '');
    } catch {
      return s.replace(/\/$/, '');
    }
  };
  return norm(a) === norm(b);
}

export interface DiscoverOptions {
  fetchFn: FetchLike;
  /** The 401's `resource_metadata` hint; without it the well-known paths. */
  resourceMetadataUrl?: URL | undefined;
  /** `[oauth] issuer`: only this authorization server is accepted. */
  issuer?: string | undefined;
  grant: 'authorization_code' | 'client_credentials' | 'device_code';
}

/**
 * Find and check the server's protected-resource metadata (the 401's hint, then the
 * well-known paths) and its authorization server's metadata (OAuth, then OpenID discovery,
 * as the SDK tries them). Throws a SignInError saying what is wrong; nothing is stored.
 */
export async function discover(serverUrl: URL, options: DiscoverOptions): Promise<OAuthDiscoveryState> {
  const { fetchFn } = options;
  let resourceMetadata: OAuthProtectedResourceMetadata | undefined;
  try {
    resourceMetadata = await discoverOAuthProtectedResourceMetadata(serverUrl, options.resourceMetadataUrl ? { resourceMetadataUrl: options.resourceMetadataUrl } : {}, fetchFn);
  } catch (error) {
    if (error instanceof SignInError) throw error;
    // None: the 2025-03-26 rule, the server's origin is its authorization server.
  }
  const advertised = resourceMetadata?.authorization_servers?.[0];
  const authorizationServerUrl = advertised ?? new URL('/', serverUrl).href;
  checkEndpoint('authorization server', authorizationServerUrl);
  if (options.issuer !== undefined && !sameIssuer(options.issuer, authorizationServerUrl)) {
    throw new SignInError('bad_metadata', `the server sends IRIS to the authorization server ${authorizationServerUrl}, not to the configured issuer ${options.issuer}; refused`);
  }
  // The SDK's OpenID metadata schema drops fields it does not name (the device endpoint,
  // authorization_response_iss_parameter_supported): keep the document as it came.
  let document: Record<string, unknown> = {};
  const keeping: FetchLike = async (input, init) => {
    const response = await fetchFn(input, init);
    if (response.ok) document = ((await response.clone().json().catch(() => ({}))) ?? {}) as Record<string, unknown>;
    return response;
  };
  let metadata;
  try {
    metadata = await discoverAuthorizationServerMetadata(authorizationServerUrl, { fetchFn: keeping });
    if (metadata !== undefined && document.issuer === metadata.issuer) metadata = { ...document, ...metadata };
  } catch (error) {
    if (error instanceof SignInError) throw error;
    throw new SignInError('bad_metadata', `the authorization server metadata of ${authorizationServerUrl} is not usable (${messageOf(error).split('\n')[0] ?? ''})`);
  }
  if (metadata === undefined) {
    throw new SignInError('no_sign_in', resourceMetadata === undefined
      ? `it publishes no OAuth metadata (no protected-resource metadata, no authorization server metadata at ${authorizationServerUrl})`
      : `its authorization server ${authorizationServerUrl} publishes no metadata`);
  }
  if (!sameIssuer(metadata.issuer, authorizationServerUrl)) {
    throw new SignInError('bad_metadata', `the metadata of ${authorizationServerUrl} names another issuer, ${brief(metadata.issuer)}; refused`);
  }
  const endpoints = metadata as Record<string, unknown>;
  for (const key of ['authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'revocation_endpoint', 'device_authorization_endpoint']) {
    if (typeof endpoints[key] === 'string') checkEndpoint(key.replace(/_/g, ' '), endpoints[key]);
  }
  if (options.grant === 'authorization_code' && !(metadata.code_challenge_methods_supported ?? []).includes('S256')) {
    throw new SignInError('no_pkce', `the authorization server ${authorizationServerUrl} does not advertise PKCE with S256 (code_challenge_methods_supported), which the MCP specification requires; refused`);
  }
  return {
    authorizationServerUrl,
    authorizationServerMetadata: metadata,
    ...(resourceMetadata === undefined ? {} : { resourceMetadata }),
    ...(options.resourceMetadataUrl === undefined ? {} : { resourceMetadataUrl: options.resourceMetadataUrl.href }),
  };
}
