// The login form: the coordinator's client token, kept by the browser as an HttpOnly cookie.
import {getJson} from '../api.js';
import {fill, h} from '../dom.js';

export async function render(root) {
  document.title = 'Log in · ablate';
  const q = new URLSearchParams(location.search);
  const next = q.get('next') || '/sweeps';
  const auth = await getJson('/api/auth');
  if (!auth.required || auth.authorized) {
    fill(root, h('p', {}, auth.required ? 'You are logged in. ' : 'This coordinator needs no token. ',
      h('a', {href: next}, 'Continue')),
    auth.required ? h('form', {method: 'post', action: '/api/logout'}, h('button', {}, 'Log out')) : null);
    return;
  }
  fill(root, h('h1', {}, 'Log in'),
    h('p', {}, 'This coordinator asks for its client token (the file given to ',
      h('code', {}, '--client-token-file'), ').'),
    q.get('error') ? h('p', {class: 'error', id: 'login-error'}, q.get('error') === 'slow'
      ? `Too many wrong tokens from this address: wait ${q.get('wait') || 'a few'} s, then try again.`
      : 'That token is not the right one.') : null,
    h('form', {method: 'post', action: '/api/login', class: 'login'},
      h('input', {type: 'hidden', name: 'next', value: next}),
      h('label', {}, 'token ', h('input', {type: 'password', name: 'token', id: 'token',
        autocomplete: 'current-password', required: true})),
      h('button', {type: 'submit', id: 'login-button'}, 'Log in')));
}
