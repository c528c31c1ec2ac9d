import { render } from 'preact';
import { App } from './app.js';
import { takeSignInFromUrl } from './store.js';
import { showControlCharacters } from './visible.js';
import './styles.css';

showControlCharacters();
takeSignInFromUrl();

render(<App />, document.getElementById('app')!);
