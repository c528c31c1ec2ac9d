import { render } from 'preact';
import { App } from './app.js';
import { showControlCharacters } from './visible.js';
import './styles.css';

showControlCharacters();

render(<App />, document.getElementById('app')!);
